"""Single-candidate acceptance of a draft against its target.

At temperature T it is sum_v min(p_T(v), q_T(v)), with p the target's and q the draft's next-token
distribution, averaged over every position of held-out sequences (each position's prefix is one context).
T = 0 compares greedy tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


@torch.no_grad()
def measure_acceptance(target, draft, contexts, temperature: float, *, batch_size: int = 8) -> float:
    """Mean over every position of `contexts` (token-id sequences, or a LongTensor [N, S]) of
    sum_v min(p_T, q_T); T = 0 gives the rate of equal greedy tokens."""
    return measure_acceptances(target, draft, contexts, [temperature], batch_size=batch_size)[temperature]


@torch.no_grad()
def measure_acceptances(target, draft, contexts, temperatures, *, batch_size: int = 8) -> dict:
    """`measure_acceptance` for several temperatures with one forward pass per model: {T: acceptance}."""
    if any(t < 0 for t in temperatures):
        raise ValueError(f"temperatures must be >= 0, got {list(temperatures)}")
    rows = [torch.as_tensor(c, dtype=torch.long) for c in contexts]
    if not rows:
        raise ValueError("contexts is empty")
    totals, count = dict.fromkeys(temperatures, 0.0), 0
    for start in range(0, len(rows), batch_size):
        for ids in same_length_batches(rows[start : start + batch_size]):
            target_logits = target(input_ids=ids.to(target.device)).logits.float().cpu()  # [B, S, V]
            draft_logits = draft(input_ids=ids.to(draft.device)).logits.float().cpu()  # [B, S, V]
            for temperature in temperatures:
                totals[temperature] += float(overlap(target_logits, draft_logits, temperature).sum())
            count += ids.numel()
    return {t: total / count for t, total in totals.items()}


def overlap(target_logits: torch.Tensor, draft_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """sum_v min(p_T, q_T) per position [B, S]; at T = 0 whether the argmaxes agree."""
    if temperature == 0:
        return (target_logits.argmax(-1) == draft_logits.argmax(-1)).double()
    target_probs = torch.softmax(target_logits / temperature, dim=-1)  # [B, S, V]
    draft_probs = torch.softmax(draft_logits / temperature, dim=-1)
    return torch.minimum(target_probs, draft_probs).sum(-1).double()


def same_length_batches(rows: Sequence[torch.Tensor]):
    by_length: dict[int, list[torch.Tensor]] = {}
    for row in rows:
        by_length.setdefault(len(row), []).append(row)
    for group in by_length.values():
        yield torch.stack(group)  # [b, S]
