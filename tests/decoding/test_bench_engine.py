"""The engine benchmark on a synthetic pair (tiny settings): every system timed, paired ratios."""

import pytest

from resispec.bench import engine as bench
from resispec.bench.paired import paired_ratio


def test_bench_engine_runs_every_system_on_a_synthetic_pair(tmp_path, capsys):
    target_dir, draft_dir = bench.synthetic_pair(
        tmp_path / "pair", vocab=64, hidden=64, layers=3, draft_layers=1
    )
    argv = ["--target", target_dir, "--draft", draft_dir, "--max-new-tokens", "6", "--prompts", "2",
            "--trees", "auto,chain2", "--methods", "specinfer,sequoia"]  # fmt: skip
    argv += ["--json", str(tmp_path / "rows.json")]
    assert bench.main(argv) == 0
    text = capsys.readouterr().out
    for name in ("autoregressive", "hf_assisted", "engine", "best exact engine configuration"):
        assert name in text
    rows = bench.run(argv)
    assert [r["system"] for r in rows] == ["autoregressive", "hf_assisted"] + ["engine"] * 4
    assert rows[0]["x_autoregressive"] == pytest.approx(1.0)
    for row in rows[2:]:
        assert row["tokens"] >= 2 and 1.0 <= row["accepted_length"] <= 9
        assert row["x_autoregressive_ci"][0] <= row["x_autoregressive"] <= row["x_autoregressive_ci"][1]
        assert sum(row["share"].values()) == pytest.approx(1.0)
    assert rows[2]["tree"].startswith("auto(")


def test_paired_ratio_is_a_ratio_of_sums_with_a_paired_interval():
    """Identical systems give exactly 1 with a zero-width interval, whatever the prompt spread."""
    same = paired_ratio([10, 20, 30], [1.0, 5.0, 2.0], [10, 20, 30], [1.0, 5.0, 2.0])
    assert same == (1.0, 1.0, 1.0)
    twice = paired_ratio([10, 20], [1.0, 2.0], [10, 20], [2.0, 4.0])
    assert twice.value == pytest.approx(2.0) and twice.low == pytest.approx(2.0)
    with pytest.raises(ValueError, match="equal, non-empty"):
        paired_ratio([1], [1.0], [1, 2], [1.0, 2.0])


def test_bench_engine_needs_models():
    with pytest.raises(ValueError, match="--target"):
        bench.run([])
