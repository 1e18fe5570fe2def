"""The engine benchmark on a synthetic pair (tiny settings): every system timed, paired ratios."""

import pytest

from resispec.bench import engine as bench
from resispec.bench.paired import paired_ratio


def test_bench_engine_runs_every_system_on_a_synthetic_pair(tmp_path, capsys):
    target_dir, draft_dir = bench.synthetic_pair(
        tmp_path / "pair", vocab=64, hidden=64, layers=3, draft_layers=1
    )
    argv = [
        "--target",
        target_dir,
        "--draft",
        draft_dir,
        "--max-new-tokens",
        "16",
        "--prompts",
        "2",
        "--trees",
        "auto,chain2",
        "--methods",
        "specinfer,sequoia",
    ]
    argv += ["--json", str(tmp_path / "rows.json")]
    assert bench.main(argv) == 0
    captured = capsys.readouterr()
    text = captured.out
    assert "prompt 2/2 (6 systems)" in captured.err and "ETA 0 s" in captured.err
    for name in ("autoregressive", "hf_assisted", "engine", "best exact engine configuration"):
        assert name in text
    assert "CPU goal, overhead share auto specinfer: " in text
    assert "goal <= 5%: not decided (the goal is for the CPU default pair, this run has another)" in text
    assert "CPU goal, overhead share d5b3 sequoia: not run (add d5b3 to --trees): not decided" in text
    rows = bench.run(argv)
    assert [r["system"] for r in rows] == ["autoregressive", "hf_assisted"] + ["engine"] * 4
    assert rows[0]["x_autoregressive"] == pytest.approx(1.0)
    for row in rows[2:]:
        assert row["tokens"] >= 2 and 1.0 <= row["accepted_length"] <= 9  # 16 tokens: >= 2 steps (depth <= 8)
        assert row["x_autoregressive_ci"][0] <= row["x_autoregressive"] <= row["x_autoregressive_ci"][1]
        assert sum(row["share"].values()) == pytest.approx(1.0)
        assert set(row["share"]) == {"draft", "target", "verify", "shaping", "commit", "other"}
        share, low, high = row["overhead"]  # (step - draft - target) / step after each prompt's first step
        assert 0 < share < 1 and (low <= share <= high or low != low)  # NaN ends: no interval
    modes = [(r["compile_mode"], r["verify_mode"]) for r in rows]  # the CPU's choices, HF's own
    assert modes == [("none", "none"), ("eager", "hf")] + [("none", "path")] * 4
    assert "x HF-asst(eager)" in text
    assert rows[2]["tree"].startswith("auto(")
    assert rows[0]["parents"] is None and rows[1]["parents"] is None
    assert rows[2]["tree"] == f"auto({len(rows[2]['parents'])})" and rows[2]["parents"][0] == -1
    assert rows[4]["tree"] == "chain2" and rows[4]["parents"] == [-1, 0, 1]


def test_paired_ratio_is_a_ratio_of_sums_with_a_paired_interval():
    """Identical systems give exactly 1 with a zero-width interval, whatever the prompt spread."""
    same = paired_ratio([10, 20, 30], [1.0, 5.0, 2.0], [10, 20, 30], [1.0, 5.0, 2.0])
    assert same == (1.0, 1.0, 1.0)
    twice = paired_ratio([10, 20], [1.0, 2.0], [10, 20], [2.0, 4.0])
    assert twice.value == pytest.approx(2.0) and twice.low == pytest.approx(2.0)
    with pytest.raises(ValueError, match="equal, non-empty"):
        paired_ratio([1], [1.0], [1, 2], [1.0, 2.0])


def test_bench_engine_needs_models_and_says_how_to_build_the_default_pair(tmp_path, monkeypatch):
    """Without models it takes the CPU default pair, and says which Snakemake targets build it."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"--target.*snakemake --cores 2 results/models/smollm2-135m/READY"):
        bench.run([])
    with pytest.raises(ValueError, match="both --target and --draft"):
        bench.run(["--target", "somewhere"])


def test_bench_engine_names_the_methods_a_given_profile_lacks(tmp_path):
    """Regression: a workflow profile carries rows only for the methods its sheets tree with `auto`;
    the bench stopped deep inside tree resolution. It now names the file, the methods and the way out."""
    from resispec.decoding.costs import CostProfile
    from resispec.decoding.profile import PairProfile

    target_dir, draft_dir = bench.synthetic_pair(
        tmp_path / "pair", vocab=64, hidden=64, layers=3, draft_layers=1
    )
    costs = CostProfile([1, 64], [1.0, 1.1], [0.0, 0.01, 0.0, 0.0], {})
    acceptance = {"1": {"sequoia": [0.6, 0.2], "specinfer": [0.5, 0.1]}}
    path = tmp_path / "profile.json"
    path.write_text(PairProfile(acceptance, costs, {"max_nodes": 16, "max_depth": 4}).to_json())
    argv = [
        "--target",
        target_dir,
        "--draft",
        draft_dir,
        "--prompts",
        "1",
        "--profile",
        str(path),
        "--trees",
        "auto",
        "--methods",
        "specinfer,ers,optimal",
    ]
    with pytest.raises(ValueError, match=r"profile\.json: no acceptance rows for \['ers', 'optimal'\]"):
        bench.run(argv)


def test_a_compiled_engine_warms_up_on_a_whole_generation():
    """Regression: a 4-token warm-up built the compiled drafter's graphs for a few pending lengths only, so
    the first timed prompt compiled the rest (measured: specinfer d5b3 at 0.15x [0.08, 0.36] of the target
    with --compile default, against 0.30x eager). A compiled run now warms up on --max-new-tokens."""
    from argparse import Namespace

    _warmup_tokens = bench._warmup_tokens

    def args(compile_mode, device="cpu"):
        return Namespace(compile=compile_mode, device=device, max_new_tokens=64)

    assert _warmup_tokens(args(None)) == _warmup_tokens(args("none")) == 4  # eager on a CPU by default
    assert _warmup_tokens(args("default")) == _warmup_tokens(args("reduce-overhead")) == 64
    assert _warmup_tokens(args(None, device="cuda")) == 64  # the engine compiles on CUDA by default
