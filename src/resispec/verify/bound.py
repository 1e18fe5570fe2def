"""alpha*(p, q, k) = min_H p(H) + 1 - q(H)^k, the acceptance bound for k i.i.d. candidates (section 6),
and its largest value given only the single-candidate acceptance beta (``alpha_star_upper_from_beta``)."""

from __future__ import annotations

import numpy as np
import torch

from .checks import as_float64, check_num_candidates, check_pair

OVERLAP_TOL = 1e-9  # a float64 sum of min(p, q) over a vocabulary may exceed 1 by a few ulps


def alpha_star_batched(
    target_probs: torch.Tensor, draft_probs: torch.Tensor, num_candidates: int
) -> torch.Tensor:
    """Bound [...] for float64 inputs [..., V]: min over prefixes of tokens sorted by p/q ascending."""
    ratio = torch.where(
        draft_probs > 0, target_probs / draft_probs.clamp_min(torch.finfo(draft_probs.dtype).tiny), torch.inf
    )  # [..., V]; q = 0 tokens go last (they only add to p(H))
    order = torch.argsort(ratio, dim=-1, stable=True)
    target_cum = torch.gather(target_probs, -1, order).cumsum(-1)  # p(H) over prefixes
    draft_cum = torch.gather(draft_probs, -1, order).cumsum(-1).clamp(max=1.0)
    values = target_cum + 1 - draft_cum**num_candidates  # [..., V]
    return values.min(-1).values.clamp(max=1.0)  # the empty prefix gives 1


def alpha_star(target_probs: torch.Tensor, draft_probs: torch.Tensor, num_candidates: int) -> float:
    """Upper bound on the acceptance of any exact verifier with k i.i.d. candidates from q."""
    check_pair(target_probs, draft_probs)
    num_candidates = check_num_candidates(num_candidates)
    target, draft = as_float64(target_probs, draft_probs)
    return float(alpha_star_batched(target, draft, num_candidates))


def alpha_star_upper_from_beta(overlap, num_candidates: int):
    """f_k(beta) = min(1, beta + max_{s in [1 - beta, 1]} (s - s^k)): the largest alpha*(p, q, k) over
    every pair whose single-candidate acceptance sum_v min(p(v), q(v)) is ``overlap`` (= beta).

    Proof (docs/verifiers.md section 6): for H = {v : p(v) < q(v)}, p(H) = q(H) - (1 - beta) and
    q(H) = s lies in [1 - beta, 1], so alpha* <= p(H) + 1 - q(H)^k = beta + s - s^k. Tight: the
    two-token pair q = (s, 1 - s), p = (s - 1 + beta, 2 - beta - s) with s the maximiser attains it.
    f_k is non-decreasing and concave: 1 - (1 - beta)^k up to beta = 1 - s0 (s0 = k^(-1/(k-1)), where
    the slope k (1 - beta)^(k-1) falls to 1), then beta + s0 - s0^k, capped at 1. f_1(beta) = beta.
    ``overlap``: a float or an array in [0, 1]; returns the same shape (float64).
    """
    k = check_num_candidates(num_candidates)
    beta = np.asarray(overlap, dtype=np.float64)
    if not np.all(np.isfinite(beta)) or np.any(beta < -OVERLAP_TOL) or np.any(beta > 1 + OVERLAP_TOL):
        raise ValueError(f"overlap must lie in [0, 1], got {overlap!r}")
    beta = beta.clip(0.0, 1.0)
    if k == 1:
        value = beta.copy()
    else:
        peak = k ** (-1.0 / (k - 1))  # argmax of s - s^k on [0, 1]
        s = np.maximum(1.0 - beta, peak)
        value = np.minimum(1.0, beta + s - s**k)
    return float(value) if value.ndim == 0 else value
