"""Batched ``optimal`` verification (placeholder: per-row reference plans)."""

from __future__ import annotations

import torch

from .checks import as_float64
from .optimal import accept_probability, build_plan, select_position
from .rows import BatchOutcome, draw_rows


def verify_optimal_rows(target_probs, draft_probs, candidates, valid, generator, tick):
    target, draft = as_float64(target_probs, draft_probs)
    accepted = torch.full(target.shape[:1], -1, dtype=torch.long, device=target.device)
    tokens = torch.zeros_like(accepted)
    for row in range(target.shape[0]):
        k = int(valid[row].sum())
        if k == 0:
            tokens[row] = draw_rows(
                target[row : row + 1],
                torch.rand(1, generator=generator, device=target.device, dtype=torch.float64),
                target[row : row + 1],
            )[0]
            continue
        plan = build_plan(target[row], draft[row], k)
        cands = candidates[row, :k]
        index = select_position(plan, cands, draft[row][cands] > 0, generator)
        if index is not None:
            accept = accept_probability(target[row][cands[index]], plan.selection[cands[index]])
            if bool(torch.rand((), generator=generator, device=target.device, dtype=torch.float64) < accept):
                accepted[row], tokens[row] = index, cands[index]
                continue
        residual = (target[row] - plan.selection).clamp_min(0)
        tokens[row] = draw_rows(
            residual[None],
            torch.rand(1, generator=generator, device=target.device, dtype=torch.float64),
            target[row : row + 1],
        )[0]
    return BatchOutcome(accepted, tokens)
