"""Row-batched helpers shared by the batched verifiers: the outcome type and the inverse-CDF draw."""

from __future__ import annotations

from typing import NamedTuple

import torch


class BatchOutcome(NamedTuple):
    """``accepted_index`` long [B] (index into the row's candidates, -1 if none) and ``token`` long [B]
    (the accepted candidate, else the residual or bonus token)."""

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
