"""alpha*_wor: the acceptance bound for k candidates drawn *without* replacement (docs/optimal-verifier.md
section 12), the bound of ``sequoia``.

The min-cut argument of alpha* holds for any tuple law: alpha*_wor = min_H p(H) + 1 - P_wor(H), where
P_wor(H) is the probability that all k candidates lie in H. With A = V minus H and the Gumbel-top-k
representation (each token's arrival time is Exponential(q_i); the candidates are the first k arrivals),

    P_wor(H) = int_0^inf q(A) e^{-q(A) t} Pr[ sum_{i in H} Bernoulli(1 - e^{-q_i t}) >= k ] dt,

a 1-D integral of a Poisson-binomial tail. The tail is a DP over H (counts 0..k-1) on a grid of
t = e^s, updated token by token along the p/q-ascending order, and integrated by the trapezoid rule in
s. The minimum is taken over those V + 1 prefixes only: it equals the minimum over all 2^V sets in every
brute-force test (tests/verify/test_verify_wor_bound.py) but is not proved, so the value is exact only
under that assumption and otherwise an upper bound on the true alpha*_wor. Cost O(V k n_grid): meant for
the audit's reduced vocabularies (hundreds of tokens), not for V = 50,000 at every node.
"""

from __future__ import annotations

import math

import torch

from .checks import as_float64, check_num_candidates, check_pair

LOG_STEP = 0.1  # trapezoid step in log t: the integrand is smooth and decays at both ends (spectral rule)
T_FIRST = 1e-7  # first arrival time of the grid: k >= 1 arrivals before it have probability < 1e-7
LAST_ARRIVALS = 100.0  # the grid ends at LAST_ARRIVALS / (smallest positive q): every token has arrived


def time_grid(draft: torch.Tensor) -> torch.Tensor:
    """Arrival times t = e^s [n_grid] on the trapezoid grid, from T_FIRST until every drafted token
    has arrived with probability 1 - e^-LAST_ARRIVALS (the k-th candidate may be a very unlikely token)."""
    smallest = float(draft[draft > 0].min())
    low, high = math.log(T_FIRST), math.log(max(LAST_ARRIVALS / smallest, 1.0))
    return torch.exp(torch.arange(low, high + LOG_STEP, LOG_STEP, dtype=torch.float64, device=draft.device))


def prefix_tails(draft_sorted: torch.Tensor, k: int, times: torch.Tensor) -> torch.Tensor:
    """Pr[at least k of the first j tokens have arrived by t] [V, n_grid] for j = 1..V (sorted order)."""
    pmf = torch.zeros((k, times.shape[0]), dtype=times.dtype, device=times.device)  # counts 0..k-1
    pmf[0] = 1.0
    tails = []
    for mass in draft_sorted.tolist():
        if mass > 0:
            arrived = -torch.expm1(-mass * times)  # [n_grid]
            pmf[1:] = pmf[1:] * (1 - arrived) + pmf[:-1] * arrived
            pmf[0] = pmf[0] * (1 - arrived)
        tails.append((1.0 - pmf.sum(0)).clamp(0.0, 1.0))
    return torch.stack(tails)


def all_inside(tails: torch.Tensor, outside: torch.Tensor, times: torch.Tensor) -> torch.Tensor:
    """P_wor(H) [V] from tails [V, n_grid] and the outside masses q(A) [V], by the trapezoid rule in log t.

    The integrand in s = log t is q(A) t e^{-q(A) t} tail(t); beyond the grid the tail is constant, which
    adds e^{-q(A) t_max} tail(t_max). An empty A (q(A) = 0) gives the tail at infinity.
    """
    rate = outside[:, None]  # [V, 1]
    density = rate * times * torch.exp(-rate * times) * tails  # [V, n_grid]
    integral = LOG_STEP * (density.sum(1) - 0.5 * (density[:, 0] + density[:, -1]))
    integral = integral + torch.exp(-outside * times[-1]) * tails[:, -1]
    return torch.where(outside > 0, integral, tails[:, -1])


def alpha_star_wor(target_probs: torch.Tensor, draft_probs: torch.Tensor, num_candidates: int) -> float:
    """Upper bound on the acceptance of any exact verifier whose k candidates are drawn without
    replacement from q (Gumbel top-k, as ``sequoia``); min over the p/q-ascending prefixes H."""
    check_pair(target_probs, draft_probs)
    k = check_num_candidates(num_candidates)
    target, draft = as_float64(target_probs, draft_probs)
    drafted = int((draft > 0).sum())
    if drafted < k:
        raise ValueError(
            f"alpha_star_wor: only {drafted} tokens have draft_probs > 0, fewer than num_candidates={k}: "
            "k distinct candidates cannot be drawn"
        )
    ratio = torch.where(draft > 0, target / draft.clamp_min(torch.finfo(draft.dtype).tiny), torch.inf)
    ratio = torch.where((draft > 0) | (target > 0), ratio, -1.0)  # p = q = 0 first: never drawn, never wanted
    order = torch.argsort(ratio, stable=True)  # [V], p/q ascending
    draft_sorted, target_sorted = draft[order], target[order]
    outside = draft_sorted.flip(0).cumsum(0).flip(0)[1:]  # q of the tokens after each prefix
    outside = torch.cat([outside, outside.new_zeros(1)]).clamp_min(0.0)  # [V]
    times = time_grid(draft)
    inside = all_inside(prefix_tails(draft_sorted, k, times), outside, times)  # [V]
    values = target_sorted.cumsum(0) + 1 - inside  # [V]; the empty prefix gives 1
    return float(values.min().clamp(max=1.0))
