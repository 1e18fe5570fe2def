"""Smoke test of the engine benchmark on a synthetic pair (tiny settings)."""

import pytest
import torch

from resispec.bench import engine as bench


def test_bench_engine_runs_on_synthetic_pair(tmp_path, capsys):
    target_dir, draft_dir = bench.synthetic_pair(
        tmp_path / "pair", vocab=64, hidden=64, layers=3, draft_layers=1
    )
    argv = [
        "--target",
        target_dir,
        "--draft",
        draft_dir,
        "--max-new-tokens",
        "6",
        "--prompts",
        "1",
        "--repeats",
        "1",
    ]
    argv += [
        "--trees",
        "chain2,d3b2",
        "--methods",
        "specinfer,sequoia",
        "--json",
        str(tmp_path / "rows.json"),
    ]
    assert bench.main(argv) == 0
    text = capsys.readouterr().out
    for name in ("autoregressive", "hf_assisted", "engine"):
        assert name in text
    rows = bench.run(argv)
    assert [r["system"] for r in rows] == ["autoregressive", "hf_assisted"] + ["engine"] * 4
    assert rows[0]["speedup"] == pytest.approx(1.0)
    engine_rows = rows[2:]
    assert all(1.0 <= r["accepted_length"] <= {"chain2": 3, "d3b2": 3}[r["tree"]] for r in engine_rows)
    assert torch.tensor([r["tokens"] for r in engine_rows]).min() >= 1


def test_bench_engine_needs_models():
    with pytest.raises(ValueError, match="--target"):
        bench.run([])
