"""The ers planning pass against the LP optimum over all sequential plans with replacement."""

import numpy as np
import torch
from scipy.optimize import linprog
from verify_cases import random_cases

from resispec.verify import acceptance_rate, alpha_star, alpha_star_upper_from_beta


def lp_optimum(target, draft, k):
    """max sum_i,v c_i(v) s.t. 0 <= c_i(v) <= M_i(v) and c_i(v) <= R_i q(v), M, R linear in earlier c."""
    target, draft = target.numpy(), draft.numpy()
    vocab = target.size
    n = k * vocab
    rows, bounds = [], []
    for step in range(k):
        for token in range(vocab):
            residual_row = np.zeros(n)  # c_i(v) + sum_{j<i} c_j(v) <= p(v)
            reach_row = np.zeros(n)  # c_i(v) + q(v) sum_{j<i} sum_u c_j(u) <= q(v)
            for earlier in range(step):
                residual_row[earlier * vocab + token] = 1
                reach_row[earlier * vocab : (earlier + 1) * vocab] = draft[token]
            residual_row[step * vocab + token] = 1
            reach_row[step * vocab + token] += 1
            rows += [residual_row, reach_row]
            bounds += [target[token], draft[token]]
    result = linprog(
        -np.ones(n), A_ub=np.array(rows), b_ub=np.array(bounds), bounds=(0, None), method="highs"
    )
    assert result.status == 0, result.message
    return -result.fun


def test_ers_reaches_the_lp_optimum_on_most_small_cases():
    """ers within 0.01 of the LP optimum on >= 90% of 200 random cases (V 3..6, k 2..4).

    Sanity of the oracle: LP >= ers and LP >= specinfer (both are feasible plans), LP <= alpha*
    <= f_k(beta) (the lemma, verify.alpha_star_upper_from_beta).
    """
    close, gaps = 0, []
    cases = list(random_cases(seed=11, count=200, vocab_range=(3, 6), k_range=(2, 4)))
    for target, draft, k in cases:
        optimum = lp_optimum(target, draft, k)
        ers = acceptance_rate("ers", target, draft, k)
        assert optimum >= ers - 1e-7
        assert optimum >= acceptance_rate("specinfer", target, draft, k) - 1e-7
        assert optimum <= alpha_star(target, draft, k) + 1e-7
        overlap = float(torch.minimum(target, draft).sum())
        assert optimum <= alpha_star_upper_from_beta(overlap, k) + 1e-7
        close += optimum - ers <= 0.01
        gaps.append(optimum - ers)
    assert close >= 0.9 * len(cases), f"within 0.01 on {close}/{len(cases)}; worst gap {max(gaps):.4f}"
