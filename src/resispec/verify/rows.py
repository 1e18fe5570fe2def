"""Row-batched helpers shared by the batched verifiers: the outcome type and the inverse-CDF draw."""

from __future__ import annotations

from typing import NamedTuple

import torch

NO_CANDIDATE = -1  # ``accepted_index`` of a row that accepts none of its candidates (or has none: a leaf)


class BatchOutcome(NamedTuple):
    """``accepted_index`` long [B] (index into the row's candidates, ``NO_CANDIDATE`` if none) and
    ``token`` long [B] (the accepted candidate, else the residual or bonus token)."""

    accepted_index: torch.Tensor
    token: torch.Tensor


def draw_rows(measure: torch.Tensor, uniform: torch.Tensor, fallback: torch.Tensor) -> torch.Tensor:
    """One token per row of an unnormalised measure [B, V] by inverse CDF in float64 (``samplers.draw``
    batched): the first index whose CDF exceeds u * total; rows without mass use ``fallback`` [B, V]."""
    cdf = measure.double().cumsum(-1)  # [B, V]
    empty = ~(cdf[:, -1:] > 0)  # [B, 1]
    cdf = torch.where(empty, fallback.double().cumsum(-1), cdf)
    point = uniform.double().unsqueeze(-1) * cdf[:, -1:]  # [B, 1]
    index = torch.searchsorted(cdf, point, right=True)[:, 0]
    return index.clamp(max=cdf.shape[-1] - 1)


def leaf_outcome(target_probs: torch.Tensor, generator: torch.Generator) -> BatchOutcome:
    """Rows without candidates (leaves): the bonus token drawn from the target [B, V], whatever the method."""
    rows, device = target_probs.shape[0], target_probs.device
    final = torch.rand(rows, generator=generator, device=device, dtype=torch.float64)
    none = torch.full((rows,), NO_CANDIDATE, dtype=torch.long, device=device)
    return BatchOutcome(none, draw_rows(target_probs, final, target_probs))
