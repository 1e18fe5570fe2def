"""What the audit keeps of a run's timing pass: on the prompts it samples (``audit_plans``), verified nodes
sampled uniformly along each generation (seeded), each with its top-token distributions, and for a few of
them the full-vocabulary rows, compressed.

A *verified node* is a tree node the verification walk visited that had candidates (leaves emit their
bonus token from the target itself and need no audit). Full rows use the codec ``ROW_CODEC``: float32
little-endian, byte-shuffled (the 4 bytes of each value grouped by significance), then zlib; the
audit stage decodes them (``resispec.audit.full_vocab.decode_rows``).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch

from resispec.decoding.order import prompt_seed

__all__ = [
    "ROW_CODEC",
    "AuditPlan",
    "audit_plans",
    "audited_prompts",
    "encode_rows",
    "full_rows_per_prompt",
    "sample_nodes",
]

ROW_CODEC = "shuffle-zlib-f4le"
ZLIB_LEVEL = 6  # level 9 saves nothing more on probability rows (measured: 0.88 of the raw size either way)
SELECTION_KEY = "audit-prompt-selection"  # stands in for a prompt id when seeding the prompt selection


class AuditPlan(NamedTuple):
    """Per audited generation: ``nodes`` verified nodes sampled uniformly, ``full_rows`` of them keep
    their full-vocabulary rows."""

    nodes: int
    full_rows: int


def audited_prompts(prompt_ids: Sequence[str], count: int, seed: int) -> list[str]:
    """``count`` prompt ids drawn uniformly without replacement (seeded), in their original order."""
    count = min(count, len(prompt_ids))
    picked = set(np.random.default_rng(seed).choice(len(prompt_ids), size=count, replace=False).tolist())
    return [pid for i, pid in enumerate(prompt_ids) if i in picked]


def full_rows_per_prompt(total: int, prompts: int) -> list[int]:
    """Spread ``total`` full-row nodes over ``prompts`` audited generations, earliest prompts first."""
    if prompts <= 0:
        return []
    base, extra = divmod(total, prompts)
    return [base + (i < extra) for i in range(prompts)]


def audit_plans(settings: dict, job: dict, prompts: list[dict], full_vocab_nodes: int | None = None) -> dict:
    """{prompt id: AuditPlan} of the prompts the audit samples, in prompt order:
    ``ceil(audit.max_nodes / audit.nodes_per_prompt)`` prompts drawn uniformly (seeded from the run), each
    keeping ``audit.nodes_per_prompt`` nodes per method, ``full_vocab_nodes`` per method with full rows
    (default ``audit.full_vocab_nodes``, else 4) spread over them."""
    audit = settings.get("audit", {})
    per_prompt = audit.get("nodes_per_prompt", 8)
    count = math.ceil(audit.get("max_nodes", 2000) / per_prompt)
    seed = prompt_seed(settings.get("seed", 0), job, SELECTION_KEY)
    chosen = audited_prompts([p["prompt_id"] for p in prompts], count, seed)
    full_nodes = audit.get("full_vocab_nodes", 4) if full_vocab_nodes is None else full_vocab_nodes
    full = full_rows_per_prompt(full_nodes, len(chosen))
    return {pid: AuditPlan(per_prompt, rows) for pid, rows in zip(chosen, full, strict=True)}


def encode_rows(target_probs: torch.Tensor, draft_probs: torch.Tensor) -> dict:
    """Both rows [V] of a node in ``ROW_CODEC`` (``vocab``, ``target``, ``draft`` as bytes)."""

    def encode(row: torch.Tensor) -> bytes:
        values = row.detach().to("cpu", torch.float32).numpy().astype("<f4")  # [V]
        shuffled = values.view(np.uint8).reshape(-1, 4).T.copy()  # [4, V]
        return zlib.compress(shuffled.tobytes(), ZLIB_LEVEL)

    return {
        "codec": ROW_CODEC,
        "vocab": int(target_probs.numel()),
        "target": encode(target_probs),
        "draft": encode(draft_probs),
    }


def sample_nodes(entries: Sequence[dict], plan: AuditPlan, seed: int) -> list[dict]:
    """Sample ``plan.nodes`` verified nodes uniformly from one generation's audit entries (in generation
    order), keeping full rows (entry key ``rows``: (target [V], draft [V])) for ``plan.full_rows`` of them.

    Each kept entry gains ``position`` (its index among the generation's verified nodes) and
    ``verified_nodes`` (their number); ``rows`` is dropped, and ``full`` holds the encoded rows.
    """
    verified = [entry for entry in entries if entry["candidates"]]
    rng = np.random.default_rng([seed, 1])  # a stream apart from the decoding generator's
    size = min(plan.nodes, len(verified))
    chosen = sorted(rng.choice(len(verified), size=size, replace=False).tolist())
    full = set(rng.choice(chosen, size=min(plan.full_rows, size), replace=False).tolist()) if size else set()
    kept = []
    for position in chosen:
        entry = {key: value for key, value in verified[position].items() if key != "rows"}
        entry.update(position=position, verified_nodes=len(verified))
        if position in full:
            entry["full"] = encode_rows(*verified[position]["rows"])
        kept.append(entry)
    return kept
