"""Single-candidate acceptance of a draft against its target.

At temperature T it is sum_v min(p_T(v), q_T(v)), with p the target's and q the draft's next-token
distribution, averaged over every position of held-out sequences (each position's prefix is one context).
T = 0 compares greedy tokens.

A training job measures acceptance before and after training against the same frozen target, so the
target's side is computed once (`HeldoutTarget`) and the second measurement runs only the draft.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch


def tempered(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """logits / T for T > 0, without the division at T = 1: x / 1 is x in floating point, so the values
    (and their gradients) are bitwise the same, one pass over [..., V] fewer."""
    return logits if temperature == 1 else logits / temperature


class HeldoutBatch(NamedTuple):
    """One batch of held-out contexts of one length and the target's outputs on it."""

    ids: torch.Tensor  # [B, S] long, CPU
    logits: torch.Tensor  # [B, S, V] float32, CPU
    features: torch.Tensor | None  # [B, S, H] last hidden states on the target's device, when kept


class HeldoutTarget:
    """The target's outputs on held-out contexts (token-id sequences, or a LongTensor [N, S]), one forward
    per batch of up to ``batch_size`` contexts of the same length, kept for every later measurement.
    ``features``: also keep the last hidden states (an EAGLE head drafts from them)."""

    def __init__(self, target, contexts, *, batch_size: int = 8, features: bool = False) -> None:
        rows = [torch.as_tensor(c, dtype=torch.long) for c in contexts]
        if not rows:
            raise ValueError("contexts is empty")
        self.batches: list[HeldoutBatch] = []
        with torch.no_grad():
            for start in range(0, len(rows), batch_size):
                for ids in same_length_batches(rows[start : start + batch_size]):
                    extra = {"output_hidden_states": True} if features else {}
                    out = target(input_ids=ids.to(target.device), **extra)
                    kept = out.hidden_states[-1] if features else None
                    self.batches.append(HeldoutBatch(ids, out.logits.float().cpu(), kept))

    @property
    def positions(self) -> int:
        """Token positions over every batch."""
        return sum(batch.ids.numel() for batch in self.batches)


@torch.no_grad()
def measure_acceptance(target, draft, contexts, temperature: float, *, batch_size: int = 8) -> float:
    """Mean over every position of `contexts` (token-id sequences, or a LongTensor [N, S]) of
    sum_v min(p_T, q_T); T = 0 gives the rate of equal greedy tokens."""
    return measure_acceptances(target, draft, contexts, [temperature], batch_size=batch_size)[temperature]


@torch.no_grad()
def measure_acceptances(target, draft, contexts, temperatures, *, batch_size: int = 8) -> dict:
    """`measure_acceptance` for several temperatures with one forward pass per model: {T: acceptance}."""
    check_temperatures(temperatures)
    return acceptances(HeldoutTarget(target, contexts, batch_size=batch_size), draft, temperatures)


@torch.no_grad()
def acceptances(held: HeldoutTarget, draft, temperatures) -> dict:
    """{T: acceptance} of `draft` against the target's outputs `held`, one draft forward per batch."""
    check_temperatures(temperatures)
    totals = dict.fromkeys(temperatures, 0.0)
    for batch in held.batches:
        draft_logits = draft(input_ids=batch.ids.to(draft.device)).logits.float().cpu()  # [B, S, V]
        for temperature in temperatures:
            totals[temperature] += float(overlap(batch.logits, draft_logits, temperature).sum())
    return {t: total / held.positions for t, total in totals.items()}


def check_temperatures(temperatures) -> None:
    if any(t < 0 for t in temperatures):
        raise ValueError(f"temperatures must be >= 0, got {list(temperatures)}")


def overlap(target_logits: torch.Tensor, draft_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """sum_v min(p_T, q_T) per position [B, S]; at T = 0 whether the argmaxes agree."""
    if temperature == 0:
        return (target_logits.argmax(-1) == draft_logits.argmax(-1)).double()
    target_probs = torch.softmax(tempered(target_logits, temperature), dim=-1)  # [B, S, V]
    draft_probs = torch.softmax(tempered(draft_logits, temperature), dim=-1)
    return torch.minimum(target_probs, draft_probs).sum(-1).double()


def same_length_batches(rows: Sequence[torch.Tensor]):
    by_length: dict[int, list[torch.Tensor]] = {}
    for row in rows:
        by_length.setdefault(len(row), []).append(row)
    for group in by_length.values():
        yield torch.stack(group)  # [b, S]
