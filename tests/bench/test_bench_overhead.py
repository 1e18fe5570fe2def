"""Step times, overhead shares and goal verdicts (``resispec.bench.overhead``), the engine's keyword
arguments and the GPU goal lines, and the paper-shaped random pair (``resispec.bench.gpu_pair``)."""

from __future__ import annotations

import math
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch

from resispec.bench import gpu_pair, gpu_report, overhead
from resispec.bench.engine_runs import EngineRun, engine_kwargs
from resispec.decoding.records import StepRecord


def _out(parts: list[tuple[float, ...]], wall: float):
    steps = [StepRecord(1, [], [], [], [], *p) for p in parts]
    return SimpleNamespace(steps=steps, wall_s=wall)


def test_steady_steps_drop_the_first_step_and_spread_the_time_between_steps():
    """wall = prefill + steps' parts + loop; the loop's time goes evenly to the steps after the first."""
    parts = [(5.0, 1.0, 0.1, 0.0, 0.1), (1.0, 2.0, 0.2, 0.1, 0.2), (1.0, 2.0, 0.4, 0.0, 0.1)]
    steps = overhead.steady_steps(_out(parts, wall=3.0 + sum(map(sum, parts)) + 0.3), prefill_s=3.0)
    assert steps.parts == parts[1:] and steps.between_s == pytest.approx(0.1)
    assert overhead.step_seconds(steps) == pytest.approx([3.6, 3.6])
    assert overhead.overhead_sums(steps) == pytest.approx((1.2, 7.2))
    noisy = overhead.steady_steps(_out(parts, wall=sum(map(sum, parts))), prefill_s=3.0)
    assert noisy.between_s == 0.0 and noisy.between_raw_s == pytest.approx(-1.0)


def test_share_and_ratio_intervals_bracket_their_values():
    share = overhead.share_interval([1.0, 2.0, 1.5, 0.5], [10.0, 20.0, 10.0, 10.0])
    assert share.mean == pytest.approx(0.1) and share.low <= 0.1 <= share.high
    assert math.isnan(overhead.share_interval([1.0], [10.0]).low)
    ratio = overhead.ratio_interval([2.0, 2.2, 1.8], [1.0, 1.1, 0.9])
    assert ratio.mean == pytest.approx(2.0) and ratio.low < 2.0 < ratio.high


@pytest.mark.parametrize(
    ("interval", "expected"),
    [
        ((0.03, 0.02, 0.04), "met"),
        ((0.07, 0.06, 0.08), "missed"),
        ((0.05, 0.04, 0.06), "not decided"),
        ((0.03, math.nan, math.nan), "not decided (no interval)"),
    ],
)
def test_verdict_needs_the_whole_interval_on_one_side(interval, expected):
    assert overhead.verdict(overhead.Interval(*interval), 0.05) == expected


def test_compile_is_passed_only_when_generate_accepts_it():
    """An engine without ``compile_mode=`` never gets it; ``stop_at_eos=False`` passes no EOS ids."""

    def eager(target, draft, ids, **options): ...

    def compiled(target, draft, ids, *, compile_mode=None, **options): ...

    run = EngineRun("specinfer", "d5b3", 1.0, 4, 0, compile_mode="reduce-overhead")
    cpu = torch.device("cpu")
    assert "compile_mode" not in engine_kwargs(eager, run, cpu)
    kwargs = engine_kwargs(compiled, replace(run, stop_at_eos=False), cpu)
    assert kwargs["compile_mode"] == "reduce-overhead" and kwargs["eos_token_id"] == []
    assert "eos_token_id" not in engine_kwargs(compiled, run, cpu)  # the model's EOS ends a generation
    assert "compile_mode" not in engine_kwargs(compiled, replace(run, compile_mode=None), cpu)


def _result(device: str, scale: str, spec_steps, opt_steps, forward) -> dict:
    rows = [
        {"tree": "d5b3", "nodes": 121, "method": m, "step_s": s, "overhead": [0.2, 0.1, 0.3]}
        for m, s in (("specinfer", spec_steps), ("optimal", opt_steps))
    ]
    return {
        "environment": {"device": device},
        "settings": {"scale": scale},
        "engine": rows,
        "target_forward": [{"nodes": 121, "seconds": forward}],
    }


def test_gpu_goal_lines_decide_only_on_a_cuda_run_at_paper_scale():
    steps, forward = [0.030, 0.031, 0.029, 0.030], [0.020, 0.0201, 0.0199]
    lines = gpu_report.goal_lines(_result("cuda:0", "paper", steps, [s * 1.05 for s in steps], forward))
    assert lines[0].startswith("GPU goal, d5b3 specinfer step / its 121-node target forward: 1.50x")
    assert lines[0].endswith("goal <= 1.30x: missed")
    assert lines[1].startswith("GPU goal, d5b3 optimal step / specinfer step: 1.05x")
    assert lines[1].endswith("met")
    assert lines[2].startswith("overhead share d5b3 (121 nodes) specinfer: 20.0% [10.0, 30.0]")
    assert lines[-1] == "overhead share auto: not run (add auto to --trees)"
    cpu = gpu_report.goal_lines(_result("cpu", "tiny", steps, steps, forward))
    why = "this run is cpu at scale tiny, the goals are for a CUDA GPU at paper scale"
    assert cpu[0].endswith(f"not decided ({why})")


def test_paper_scale_uses_the_published_configs():
    target, draft = gpu_pair.pair_configs("paper")
    sizes = ("hidden_size", "num_hidden_layers", "intermediate_size", "vocab_size")
    assert tuple(target[key] for key in sizes) == (4096, 32, 11008, 32000)
    assert (draft["hidden_size"], draft["num_hidden_layers"], draft["vocab_size"]) == (768, 2, 32000)
    with pytest.raises(ValueError, match="scale must be one of"):
        gpu_pair.pair_configs("huge")


def test_the_random_pair_agrees_as_its_divergence_says():
    """Layer updates are calibrated to their RMS goal; less divergence, more agreement."""
    torch.set_num_threads(1)
    prefix = torch.randint(3, gpu_pair.TINY["vocab_size"], (24,), generator=torch.Generator().manual_seed(0))
    agreement = []
    for divergence in (0.05, 0.6):
        target, draft, facts = gpu_pair.build_pair(
            "tiny", torch.device("cpu"), torch.float32, prefix, divergence=divergence
        )
        goal = divergence / math.sqrt(2 * facts["target"]["num_hidden_layers"])
        assert facts["target"]["layer_update_rms"] == pytest.approx([goal, goal], rel=0.05)
        agreement.append(gpu_pair.single_candidate_acceptance(target, draft, prefix)["acceptance"])
    assert agreement[0] > 0.85 and agreement[1] < 0.5


def test_cpu_goal_lines_name_every_exact_method_and_how_to_add_a_missing_one():
    rows = [
        {"spec": "d5b3", "method": "specinfer", "overhead": [0.02, 0.01, 0.03]},
        {"spec": "d5b3", "method": "ers", "overhead": [0.06, 0.055, 0.07]},
    ]
    lines = overhead.cpu_overhead_lines(rows, ["specinfer", "ers", "resispec"])
    by_label = {line.split(": ")[0]: line for line in lines}
    assert len(lines) == len(overhead.CPU_GOAL_TREES) * 5  # every exact method, resispec never
    assert by_label["CPU goal, overhead share d5b3 specinfer"].endswith("goal <= 5%: met")
    assert by_label["CPU goal, overhead share d5b3 ers"].endswith("goal <= 5%: missed")
    auto_ers = by_label["CPU goal, overhead share auto ers"]
    assert auto_ers.endswith("not run (add auto to --trees): not decided")
    optimal = by_label["CPU goal, overhead share d5b3 optimal"]
    assert optimal.endswith("not run (add optimal to --methods): not decided")
    undecided = overhead.cpu_overhead_lines(rows, ["specinfer"], why_not="another pair")
    expected = "CPU goal, overhead share d5b3 specinfer: 2.0% [1.0, 3.0]; goal <= 5%: not decided"
    assert undecided[0] == expected + " (another pair)"
