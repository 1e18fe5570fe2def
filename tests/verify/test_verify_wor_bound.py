"""alpha*_wor, the bound for candidates drawn without replacement (``sequoia``), against brute force."""

import itertools

import numpy as np
import pytest
import torch
from optimal_cases import as_pair, small_cases

from resispec.verify import acceptance_bound, alpha_star, alpha_star_wor, evaluate

BOUND_TOL = 1e-9  # quadrature of alpha*_wor (trapezoid in log t) against exact enumeration


def all_inside_exact(draft: np.ndarray, inside: set, k: int) -> float:
    """P(all k candidates in H) by enumerating ordered draws without replacement from q."""
    total = 0.0
    for draw in itertools.permutations(np.flatnonzero(draft > 0), k):
        prob, drawn = 1.0, []
        for token in draw:
            left = np.delete(draft, drawn).sum()  # summed, not subtracted: exact for tiny masses
            prob, drawn = prob * draft[token] / left, drawn + [token]
        total += prob if set(draw) <= inside else 0.0
    return total


def brute_force_bound(target: np.ndarray, draft: np.ndarray, k: int) -> float:
    """min over all 2^V token sets H of p(H) + 1 - P_wor(H): the exact min cut."""
    best = 1.0
    for size in range(target.size + 1):
        for subset in itertools.combinations(range(target.size), size):
            value = target[list(subset)].sum() + 1 - all_inside_exact(draft, set(subset), k)
            best = min(best, value)
    return best


def drafted_cases(seed: int, count: int):
    for target, draft, k in small_cases(seed=seed, count=count, vocab_range=(2, 6), k_range=(1, 4)):
        yield target, draft, min(k, int((draft > 0).sum()))


def test_alpha_star_wor_equals_the_minimum_over_all_sets():
    """The minimum over p/q-ascending prefixes equals the minimum over all 2^V sets (V 2..6, k 1..4).

    The cases include q down to ~1e-30 (Dirichlet concentration 0.05), where the k-th candidate may be a
    very unlikely token: a time grid ending at a fixed t = 1e15 misses those arrivals (errors up to
    2.5e-6 here), so the grid ends where every drafted token has arrived."""
    for target, draft, k in drafted_cases(seed=41, count=150):
        expected = brute_force_bound(target.numpy(), draft.numpy(), k)
        assert alpha_star_wor(target, draft, k) == pytest.approx(expected, abs=BOUND_TOL)


def test_sequoia_never_exceeds_alpha_star_wor():
    """Exact sequoia laws (full history recursion) on 300 small cases, and certified pruned laws on
    V 16..32 (true acceptance <= acceptance + err): never above alpha*_wor; alpha*_wor >= alpha*."""
    for target, draft, k in drafted_cases(seed=42, count=300):
        result = evaluate("sequoia", target, draft, k, max_histories=10**6)
        assert result.err == 0
        bound = alpha_star_wor(target, draft, k)
        assert result.acceptance <= bound + 1e-12
        assert bound >= alpha_star(target, draft, k) - 1e-12
    for target, draft, k in small_cases(seed=43, count=40, vocab_range=(16, 32), k_range=(2, 4)):
        k = min(k, int((draft > 0).sum()))
        result = evaluate("sequoia", target, draft, k, eps=1e-9, max_histories=20000)
        assert result.err < 1e-3
        assert result.acceptance + result.err <= alpha_star_wor(target, draft, k) + 1e-9


def test_acceptance_bound_per_method():
    target, draft = as_pair([0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1])
    for method in ("specinfer", "ers", "optimal", "resispec"):
        assert acceptance_bound(method, target, draft, 2) == alpha_star(target, draft, 2)
    assert acceptance_bound("sequoia", target, draft, 2) == alpha_star_wor(target, draft, 2)
    assert acceptance_bound("deterministic", target, draft, 2) == pytest.approx(0.1 + 0.2, abs=1e-15)
    one_hot = torch.tensor([0.0, 0.0, 1.0, 0.0], dtype=torch.float64)
    assert acceptance_bound("sequoia", target, one_hot, 3) == alpha_star_wor(target, one_hot, 1)


def test_errors_name_the_problem():
    target, draft = as_pair([0.5, 0.5, 0.0], [0.5, 0.5, 0.0])
    with pytest.raises(ValueError, match="only 2 tokens have draft_probs > 0, fewer than num_candidates=3"):
        alpha_star_wor(target, draft, 3)
    with pytest.raises(ValueError, match="num_candidates must be >= 1"):
        alpha_star_wor(target, draft, 0)
    with pytest.raises(ValueError, match="unknown verification method 'nope'"):
        acceptance_bound("nope", target, draft, 1)
