"""Per-step records of tree decoding and their conversion to the raw per-prompt record format."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

__all__ = ["StepRecord", "GenerateOutput", "audit_entry"]


@dataclass
class StepRecord:
    """One draft-verify step.

    ``accepted_length``: tokens committed (the accepted tokens + the residual or bonus token), after
    any truncation at EOS or max_new_tokens. ``position_tried[i]`` / ``position_accepted[i]``: whether the
    (i+1)-th sibling candidate was visited / accepted (counts over the step's verified nodes);
    ``depth_tried[d]`` / ``depth_accepted[d]``: whether drafted level d+1 was verified / accepted.

    Times (seconds, disjoint; Figure 3's split): ``time_draft_s`` the drafter's proposal,
    ``time_target_s`` the target's tree forward (vocabulary projections included), ``time_verify_s``
    the verifier's decisions (the walk, shaping excluded), ``time_shaping_s`` ResiSpec-style shaping
    inside the verifier (the sum of ``shaping_time_s``), ``time_commit_s`` the commit (cache cuts, the
    drafter's update).
    """

    accepted_length: int
    position_tried: list[int]
    position_accepted: list[int]
    depth_tried: list[int]
    depth_accepted: list[int]
    time_draft_s: float = 0.0
    time_target_s: float = 0.0
    time_verify_s: float = 0.0
    time_shaping_s: float = 0.0
    time_commit_s: float = 0.0
    audit: list[dict] = field(default_factory=list)  # ``audit_top``: one entry per visited node
    shaping_time_s: dict[str, float] = field(default_factory=dict)  # verifier budgeting/redistribution/proxy


@dataclass
class GenerateOutput:
    """Result of :func:`resispec.decoding.engine.generate`: new token ids [T] and per-step records;
    ``compile_mode`` / ``verify_mode``: the modes it actually ran with (``decoding.compiled``; the
    autoregressive baseline verifies nothing: ``"none"``)."""

    tokens: torch.Tensor
    steps: list[StepRecord]
    wall_s: float = 0.0
    prompt_len: int = 0
    compile_mode: str = "none"
    verify_mode: str = "none"

    @property
    def accepted_lengths(self) -> list[int]:
        return [s.accepted_length for s in self.steps]

    @property
    def mean_accepted_length(self) -> float:
        return sum(self.accepted_lengths) / max(len(self.steps), 1)

    def to_record(self, **meta) -> dict:
        """Raw per-prompt record (docs/architecture.md); ``meta`` adds prompt_id, dataset, method, ..."""
        return {
            **meta,
            "prompt_len": self.prompt_len,
            "new_tokens": [int(t) for t in self.tokens.tolist()],
            "accepted_lengths": self.accepted_lengths,
            "position_tried": _sum_lists(s.position_tried for s in self.steps),
            "position_accepted": _sum_lists(s.position_accepted for s in self.steps),
            "depth_tried": _sum_lists(s.depth_tried for s in self.steps),
            "depth_accepted": _sum_lists(s.depth_accepted for s in self.steps),
            "time_draft_s": sum(s.time_draft_s for s in self.steps),
            "time_target_s": sum(s.time_target_s for s in self.steps),
            "time_verify_s": sum(s.time_verify_s for s in self.steps),
            "time_shaping_s": sum(s.time_shaping_s for s in self.steps),
            "time_commit_s": sum(s.time_commit_s for s in self.steps),
            "wall_s": self.wall_s,
            "compile_mode": self.compile_mode,
            "verify_mode": self.verify_mode,
        }


def _sum_lists(lists) -> list[int]:
    total: list[int] = []
    for values in lists:
        if len(values) > len(total):
            total.extend([0] * (len(values) - len(total)))
        for i, v in enumerate(values):
            total[i] += int(v)
    return total


def audit_entry(
    target_probs: torch.Tensor,
    draft_probs: torch.Tensor,
    candidates: torch.Tensor,
    top: int,
    **extra,
) -> dict:
    """(target, draft) distributions of one verified node truncated to the union of both top-``top`` sets.

    target_probs, draft_probs: [V]; candidates: [k]. The remaining masses are recorded as
    ``target_rest`` / ``draft_rest`` so that truncation error can be bounded downstream. ``rows`` keeps
    copies of both full rows (the timing pass samples some nodes and stores their rows,
    ``resispec.decoding.audit_sampling``; nothing else keeps them).
    """
    k = min(top, target_probs.numel())
    ids = torch.cat([target_probs.topk(k).indices, draft_probs.topk(k).indices]).unique()  # [<=2k] sorted
    target_kept = target_probs[ids].double()
    draft_kept = draft_probs[ids].double()
    return {
        **extra,
        "candidates": [int(c) for c in candidates.tolist()],
        "tokens": [int(i) for i in ids.tolist()],
        "target": target_kept.tolist(),
        "draft": draft_kept.tolist(),
        "target_rest": max(0.0, 1.0 - float(target_kept.sum())),
        "draft_rest": max(0.0, 1.0 - float(draft_kept.sum())),
        "rows": (target_probs.detach().clone(), draft_probs.detach().clone()) if candidates.numel() else None,
    }
