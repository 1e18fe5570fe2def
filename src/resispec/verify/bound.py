"""alpha*(p, q, k) = min_H p(H) + 1 - q(H)^k, the acceptance bound for k i.i.d. candidates (section 6)."""

from __future__ import annotations

import torch

from .checks import as_float64, check_num_candidates, check_pair


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
