"""``sequoia``: recursive rejection sampling without replacement (greedy plan with q_i = q minus drawn).

The residual after a rejection does not depend on which token was rejected, but the next draft law does,
so the exact law needs the recursion over rejection histories of ``_histories.py``.
"""

from __future__ import annotations

import torch

from .histories import history_law, sampled_history_law
from .sequential import plan_step


def normalise(measure: torch.Tensor) -> torch.Tensor:
    """measure / sum over the last axis; an all-zero row stays zero."""
    total = measure.sum(-1, keepdim=True)
    return torch.where(total > 0, measure / total.clamp_min(torch.finfo(measure.dtype).tiny), measure)


def remove_tokens(draft_probs: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """q_{i+1}: draft [B, V] with token tokens[b] removed from row b, renormalised; [B, V]."""
    removed = draft_probs.clone()
    removed[torch.arange(removed.shape[0], device=removed.device), tokens] = 0
    return normalise(removed)


def sequoia_accepted(residual: torch.Tensor, draft_probs: torch.Tensor) -> torch.Tensor:
    """Greedy accepted mass min(residual, q_i) for normalised residuals [..., V] (reach 1)."""
    return plan_step(residual, residual.new_ones(residual.shape[:-1]), draft_probs, 0)


def sequoia_next_residual(residual: torch.Tensor, accepted: torch.Tensor) -> torch.Tensor:
    """Residual after a rejection: norm(max(residual - q_i, 0)) = norm(residual - accepted)."""
    return normalise((residual - accepted).clamp_min(0))


def _transition(residual, draft, accepted, rows, tokens):
    next_residual = sequoia_next_residual(residual, accepted)  # [H, V]
    return next_residual[rows], remove_tokens(draft[rows], tokens)


def _final_residual(residual, draft, accepted):
    return sequoia_next_residual(residual, accepted)


def sequoia_law(target_probs, draft_probs, num_candidates, *, eps=0.0, max_histories=None):
    """(law [V], acceptance, err) of sequoia by recursion over rejection histories."""
    return history_law(
        target_probs,
        draft_probs,
        num_candidates,
        _transition,
        final_residual=_final_residual,
        eps=eps,
        max_histories=max_histories,
    )


def sequoia_estimate(target_probs, draft_probs, num_candidates, *, paths, generator):
    """Unbiased (law [V], acceptance, stderr) from sampled rejection histories."""
    return sampled_history_law(
        target_probs,
        draft_probs,
        num_candidates,
        _transition,
        paths=paths,
        generator=generator,
        final_residual=_final_residual,
    )
