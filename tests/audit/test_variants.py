"""Every (budget, order) variant of resispec on audited nodes (audit/variants.py), the exactness step's
variants output, and the report's robustness table."""

import pandas as pd
import pytest
import torch
from audit_cases import logged_node

from resispec.audit.exactness import exactness_rows
from resispec.audit.variants import PRINTED, VARIANTS, spread, variant_rows, variant_summary
from resispec.decoding.records import audit_entry
from resispec.report.robustness import read_variants, robustness_html, robustness_latex


def resispec_node(seed: int, k: int = 3, vocab: int = 10) -> dict:
    return {
        **logged_node(vocab=vocab, k=k, top=vocab, seed=seed),
        "method": "resispec",
        "prompt_id": f"p{seed}",
    }


def test_spread_picks_evenly():
    assert spread(3, 5) == [0, 1, 2]
    assert spread(10, 3) == [0, 4, 9] or spread(10, 3) == [0, 5, 9]
    assert spread(10, 0) == []


def test_every_variant_per_node_and_the_printed_one_matches_the_lumped_audit():
    nodes = [resispec_node(seed) for seed in range(6)] + [{**logged_node(seed=9), "method": "specinfer"}]
    rows = variant_rows(nodes, 4, max_histories=5000)
    assert len(rows) == 4 * len(VARIANTS) and len(VARIANTS) == 6
    assert {row["node"] for row in rows} <= set(range(6))
    for row in rows:
        if (row["budget"], row["order"]) == PRINTED:
            (lumped,) = exactness_rows("resispec", [nodes[row["node"]]], max_histories=5000)
            assert row["kl"] == pytest.approx(lumped["kl"], abs=1e-15)
            assert row["acceptance"] == pytest.approx(lumped["acceptance"], abs=1e-15)


def test_the_known_test_vector_is_inexact_under_every_variant():
    """p = (.4, .3, .3), q = (.6, .3, .1), k = 1 (docs/verifiers.md section 5): with one candidate every
    variant rejects x = 0 the same way except for the fill, and none is exact."""
    target, draft = (
        torch.tensor([0.4, 0.3, 0.3], dtype=torch.float64),
        torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64),
    )
    node = {**audit_entry(target, draft, torch.tensor([0]), 3), "method": "resispec", "prompt_id": "p"}
    rows = variant_rows([node], 1, max_histories=100)
    assert len(rows) == 6 and all(row["kl"] > 1e-3 for row in rows)
    summary = {row["variant"]: row for row in variant_summary(rows)}
    assert summary["local/decreasing_q"]["printed"] and summary["local/decreasing_q"]["nodes"] == 1
    assert all(row["share_above_alpha_star"] == 0.0 for row in summary.values())  # k = 1: acceptance = alpha*


def test_summary_counts_nodes_above_alpha_star():
    rows = [
        {
            "budget": "local",
            "order": "index",
            "kl": 0.1,
            "kl_upper": 0.2,
            "tv": 0.1,
            "acceptance": 0.9,
            "alpha_star": 0.8,
            "law_err": 0.01,
        },
        {
            "budget": "local",
            "order": "index",
            "kl": float("inf"),
            "kl_upper": float("inf"),
            "tv": 0.1,
            "acceptance": 0.5,
            "alpha_star": 0.8,
            "law_err": 0.0,
        },
    ]
    (row,) = variant_summary(rows)
    assert row["share_above_alpha_star"] == 0.5 and row["max_excess"] == pytest.approx(0.11)
    assert row["kl"] == 0.1 and row["kl_upper"] == 0.2 and row["kl_inf_nodes"] == 1


def test_exactness_step_writes_variants_and_the_report_table(tmp_path):
    from resispec.workflow.commands import main

    nodes = [resispec_node(seed, vocab=8) for seed in range(3)]
    torch.save({"job": "run", "nodes": nodes}, tmp_path / "run.pt")
    job = '{"run": "run", "dataset": "cnn_dailymail", "temperature": 1.0, "tree": "d3b3"}'
    argv = [
        "exactness",
        "--audit",
        str(tmp_path / "run.pt"),
        "--nodes",
        str(tmp_path / "nodes.csv"),
        "--job",
        job,
        "--variants",
        str(tmp_path / "v" / "run.csv"),
        "--variant-nodes",
        "2",
        "--settings",
        '{"audit": {"max_histories": 2000}}',
    ]
    assert main(argv) == 0
    frame = read_variants(tmp_path / "v")
    assert len(frame) == 2 * len(VARIANTS) and set(frame["variant"]) == {f"{b}/{o}" for b, o in VARIANTS}
    html = robustness_html(frame)
    assert "robustness-table" in html and "local/decreasing_q (as printed)" in html
    assert "longtable" in robustness_latex(frame)
    argv[argv.index("2")] = "0"
    argv[argv.index(str(tmp_path / "v" / "run.csv"))] = str(tmp_path / "empty.csv")
    assert main(argv) == 0
    assert pd.read_csv(tmp_path / "empty.csv").empty and read_variants(tmp_path / "empty.csv") is None
