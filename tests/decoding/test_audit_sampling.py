"""What the audit pass keeps (`resispec.decoding.audit_sampling`): verified nodes sampled uniformly
along a generation (seeded), full rows for the requested number, prompts drawn uniformly."""

import numpy as np
import torch
from scipy.stats import chisquare

from resispec.decoding.audit_sampling import AuditPlan, audited_prompts, full_rows_per_prompt, sample_nodes
from resispec.decoding.records import audit_entry

ALPHA = 0.001  # chi-square significance of the uniformity test (fixed seeds)


def _entries(count: int, leaves_every: int = 3) -> list[dict]:
    """A generation's audit entries: every ``leaves_every``-th node is a leaf (no candidates)."""
    generator = torch.Generator().manual_seed(0)
    out = []
    for i in range(count):
        target = torch.softmax(torch.randn(30, generator=generator), -1)
        draft = torch.softmax(torch.randn(30, generator=generator), -1)
        k = 0 if i % leaves_every == 0 else 2
        out.append(dict(audit_entry(target, draft, torch.arange(k), 4, node=i), step=i))
    return out


def test_only_verified_nodes_are_kept_in_generation_order_with_full_rows():
    entries = _entries(30)
    kept = sample_nodes(entries, AuditPlan(nodes=6, full_rows=2), seed=4)
    assert len(kept) == 6 and all(node["candidates"] for node in kept)
    assert [n["position"] for n in kept] == sorted(n["position"] for n in kept)
    assert all(node["verified_nodes"] == 20 for node in kept) and all("rows" not in n for n in kept)
    assert sum("full" in node for node in kept) == 2
    assert kept == sample_nodes(entries, AuditPlan(6, 2), seed=4)
    assert sample_nodes(entries[:2], AuditPlan(6, 2), seed=4)[0]["position"] == 0  # fewer: all of them


def test_positions_are_uniform_along_the_generation():
    """One node sampled from 12 verified nodes, over 2400 seeds: every position equally likely."""
    entries = [e for e in _entries(18) if e["candidates"]][:12]
    hits = np.zeros(12)
    for seed in range(2400):
        hits[sample_nodes(entries, AuditPlan(1, 0), seed)[0]["position"]] += 1
    assert chisquare(hits).pvalue > ALPHA


def test_prompts_and_full_rows_are_spread():
    ids = [f"p{i}" for i in range(10)]
    chosen = audited_prompts(ids, 4, seed=1)
    assert (
        len(chosen) == 4 and chosen == sorted(chosen, key=ids.index) and chosen == audited_prompts(ids, 4, 1)
    )
    assert audited_prompts(ids, 20, seed=1) == ids
    assert full_rows_per_prompt(5, 3) == [2, 2, 1] and full_rows_per_prompt(2, 4) == [1, 1, 0, 0]
