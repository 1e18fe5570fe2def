"""Oracles for the ``optimal`` verifier on small vocabularies: the LP over all ordered candidate tuples,
and the exact conditional selection law of a plan's key laws, both independent of the sampler code."""

import itertools

import numpy as np
import scipy.sparse as sp
import torch
from scipy.optimize import linprog

LP_TOLERANCE = 1e-10  # HiGHS feasibility tolerances (its minimum): certify acceptances to ~1e-9
GAUSS_NODES, GAUSS_WEIGHTS = np.polynomial.legendre.leggauss(3)  # exact for polynomials of degree <= 5


def all_tuples(vocab: int, k: int) -> np.ndarray:
    """Every ordered k-tuple of tokens [V^k, k]."""
    return np.array(list(itertools.product(range(vocab), repeat=k)), dtype=np.int64).reshape(-1, k)


def lp_acceptance(target: np.ndarray, draft: np.ndarray, k: int) -> float:
    """max P(Y in tuple) over all exact verifiers: a coupling of the tuple law q^k and p.

    Variables pi(t, y) for each ordered tuple t and each distinct token y of t; maximise their sum s.t.
    sum_y pi(t, y) <= q(t) and sum_t pi(t, y) <= p(y) (the rest of the coupling is unconstrained).
    """
    tuples = all_tuples(target.size, k)
    weight = np.prod(draft[tuples], axis=1)  # [N]
    tuples, weight = tuples[weight > 0], weight[weight > 0]
    present = (tuples[:, :, None] == np.arange(target.size)).any(axis=1)  # [N, V]
    rows, tokens = np.nonzero(present)
    n = rows.size
    a_ub = sp.vstack(
        [
            sp.csr_matrix((np.ones(n), (rows, np.arange(n))), shape=(len(tuples), n)),
            sp.csr_matrix((np.ones(n), (tokens, np.arange(n))), shape=(target.size, n)),
        ]
    )
    result = linprog(
        -np.ones(n),
        A_ub=a_ub,
        b_ub=np.concatenate([weight, target]),
        bounds=(0, None),
        method="highs",
        options={"primal_feasibility_tolerance": LP_TOLERANCE, "dual_feasibility_tolerance": LP_TOLERANCE},
    )
    assert result.status == 0, result.message
    return -result.fun


def group_densities(segment) -> np.ndarray:
    """Normalised key density of every group on every piece [G, G], from the plan's shares lam alone:
    group g takes lam_g of the measure still free, so on piece m <= g its density is proportional to
    lam_g prod_{i=m}^{g-1} (1 - lam_i) (zero after an exhausted group), normalised to integrate to 1."""
    lam = segment.lam.numpy()
    width = np.diff(segment.x.numpy())
    count = lam.size
    density = np.zeros((count, count))
    for g in range(count):
        for m in range(g + 1):
            density[g, m] = lam[g] * np.prod(1 - lam[m:g])
        total = density[g] @ width
        density[g] = density[g] / total if total > 0 else 0.0
    return density


def argmin_probs(segment, groups: np.ndarray) -> np.ndarray:
    """P(candidate i has the smallest key) [n] for competitors of the given groups [n] of one segment:
    keys are piecewise uniform, so the integrand is a polynomial of degree n - 1 on each piece and
    3-point Gauss-Legendre quadrature per piece is exact."""
    x = segment.x.numpy()
    width = np.diff(x)
    density = group_densities(segment)[groups]  # [n, G]
    cdf_start = np.concatenate([np.zeros((len(groups), 1)), np.cumsum(density * width, 1)[:, :-1]], 1)
    probs = np.zeros(len(groups))
    for piece in np.flatnonzero(width > 0):
        offsets = (GAUSS_NODES + 1) / 2 * width[piece]  # [3]
        cdf = cdf_start[:, piece, None] + density[:, piece, None] * offsets  # [n, 3]
        for i in range(len(groups)):
            others = np.prod(np.delete(1 - cdf, i, axis=0), axis=0)  # [3]
            probs[i] += density[i, piece] * width[piece] / 2 * (GAUSS_WEIGHTS @ others)
    return probs


def selection_probs(plan, draft: np.ndarray, tup: np.ndarray) -> np.ndarray:
    """Exact P(position i is selected | candidate tuple) [k] under the plan's key laws."""
    positions = plan.rank.numpy()[tup]
    segments = plan.segment_of.numpy()[positions]
    segments = np.where(draft[tup] > 0, segments, np.iinfo(np.int64).max)
    rivals = np.flatnonzero(segments == segments.min())
    probs = np.zeros(len(tup))
    segment = plan.groups.get(int(segments.min()))
    if segment is None:  # one token: the rivals' keys are i.i.d., each wins with probability 1/n
        probs[rivals] = 1.0 / len(rivals)
    else:
        probs[rivals] = argmin_probs(segment, segment.group_of.numpy()[positions[rivals] - segment.lo])
    return probs


def enumerated_law(plan, accept: np.ndarray, residual: np.ndarray, draft: np.ndarray, k: int):
    """(selection law [V], output law [V], acceptance) by enumerating every ordered tuple (q^k each)
    with its exact conditional selection law: the two-step verifier as a sum over its inputs."""
    vocab = draft.size
    selected, law, acceptance = np.zeros(vocab), np.zeros(vocab), 0.0
    for tup in all_tuples(vocab, k):
        weight = float(np.prod(draft[tup]))
        if weight == 0:
            continue
        probs = selection_probs(plan, draft, tup)
        np.add.at(selected, tup, weight * probs)
        accepted = probs * accept[tup]
        np.add.at(law, tup, weight * accepted)
        law += weight * (1 - accepted.sum()) * residual
        acceptance += weight * accepted.sum()
    return selected, law, acceptance


def as_pair(target, draft) -> tuple[torch.Tensor, torch.Tensor]:
    """float64 tensors normalised to sum 1."""
    target, draft = torch.tensor(target, dtype=torch.float64), torch.tensor(draft, dtype=torch.float64)
    return target / target.sum(), draft / draft.sum()


def small_cases(seed: int, count: int, vocab_range=(2, 7), k_range=(1, 4)):
    """Random (target, draft, k) float64 cases, cycling through four kinds: plain Dirichlet pairs, q with
    zeros (tokens p can emit but q never drafts), p with zeros, and ratio ties (p/q takes 2 values)."""
    rng = np.random.default_rng(seed)
    for index in range(count):
        vocab = int(rng.integers(vocab_range[0], vocab_range[1] + 1))
        k = int(rng.integers(k_range[0], k_range[1] + 1))
        alpha = float(np.exp(rng.uniform(np.log(0.05), np.log(5.0))))
        target, draft = rng.dirichlet(np.full(vocab, alpha)), rng.dirichlet(np.full(vocab, alpha))
        kind = index % 4
        if kind == 1 and vocab > 2:
            draft[rng.permutation(vocab)[: rng.integers(1, vocab - 1)]] = 0.0
        elif kind == 2 and vocab > 2:
            target[rng.permutation(vocab)[: rng.integers(1, vocab - 1)]] = 0.0
        elif kind == 3:
            target = draft * rng.choice([0.5, 2.0], size=vocab)
        yield (*as_pair(target, draft), k)


EDGE_CASES = [  # (target, draft, k): the list
    ([0.2, 0.3, 0.5], [0.0, 0.5, 0.5], 2),  # q with zeros
    ([0.0, 0.4, 0.0, 0.6], [0.1, 0.2, 0.3, 0.4], 3),  # p with zeros
    ([0.0, 1.0, 0.0], [0.3, 0.3, 0.4], 2),  # p one-hot
    ([0.3, 0.3, 0.4], [1.0, 0.0, 0.0], 3),  # q one-hot
    ([1.0, 0.0, 0.0], [1.0, 0.0, 0.0], 2),  # both one-hot, equal
    ([0.2, 0.3, 0.5], [0.2, 0.3, 0.5], 3),  # p = q
    ([0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5], 2),  # disjoint supports
    ([0.2, 0.2, 0.3, 0.3], [0.1, 0.1, 0.4, 0.4], 2),  # ratio ties
    ([0.1, 0.2, 0.3, 0.4], [0.1, 0.2, 0.3, 0.4][::-1], 4),  # ties in the envelope of D
    ([0.6, 0.4], [0.3, 0.7], 4),  # k > V
    ([0.2, 0.5, 0.3], [0.5, 0.25, 0.25], 4),  # k > V
    ([1 - 2e-15, 1e-15, 1e-15], [1e-15, 1 - 2e-15, 1e-15], 3),  # tiny probabilities
]
