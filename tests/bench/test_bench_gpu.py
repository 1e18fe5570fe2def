"""``python -m resispec.bench gpu`` end to end on the CPU at tiny scale, from the source tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from resispec.bench import gpu
from resispec.bench.overhead import PARTS

ROOT = Path(__file__).parents[2]
FORBIDDEN = {"snakemake", "pandas", "matplotlib", "datasets"}  # the bench must not need them
QUICK = [
    "--trees",
    "d5b3,auto",
    "--methods",
    "specinfer,optimal",
    "--nodes",
    "1,8,121",
    "--repeats",
    "2",
    "--warmup",
    "1",
    "--new-tokens",
    "12",
    "--warmup-tokens",
    "3",
    "--sync-tokens",
    "6",
]


def _bench(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Run the bench as a user would from a checkout: a fresh interpreter with PYTHONPATH=src."""
    out = tmp_path / "gpu.json"
    argv = ["--device", "cpu", "--scale", "tiny", "--threads", "1", *extra, "--json", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "resispec.bench", "gpu", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done, json.loads(out.read_text())


def _check_result(result: dict, trees: list[str], methods: list[str]) -> None:
    assert result["complete"] and result["environment"]["device"] == "cpu"
    assert result["engine_check"]["ok"]  # greedy tree decoding = transformers' greedy generation
    assert result["engine_check"]["compile_mode"] == result["settings"]["compile"]  # the pass's own mode
    pair = result["pair"]
    assert pair["target"]["repo"] == "meta-llama/Llama-2-7b-hf"
    assert pair["draft"]["repo"] == "JackFram/llama-68m"
    assert 0.3 < pair["acceptance"] < 0.95  # the draft agrees with the target like a real small draft
    assert [(r["tree"], r["method"]) for r in result["engine"]] == [(t, m) for t in trees for m in methods]
    for row in result["engine"]:
        depth = [0]
        for parent in row["parents"][1:]:
            depth.append(depth[parent] + 1)
        assert row["nodes"] == len(row["parents"]) and row["parents"][0] == -1
        assert row["steps"] >= 1 and 1 <= row["accepted_length"] <= max(depth) + 1  # levels of the tree
        assert set(row["parts_ms"]) == set(PARTS) and row["parts_ms"]["target"] > 0
        assert row["syncs_per_step"] is None or row["syncs_per_step"] > 0
        share, low, high = row["overhead"]
        assert 0 < share < 1 and len(row["step_s"]) == row["steps"] == row["step"]["n"]
    assert FORBIDDEN.isdisjoint(result["third_party_imports"])
    assert not [line for line in result["goals"] if line.endswith(": met") or line.endswith(": missed")]


def test_bench_gpu_runs_from_the_source_tree_on_the_cpu(tmp_path):
    """A quick configuration: JSON complete, table printed, GPU goals not decided on a CPU."""
    done, result = _bench(tmp_path, *QUICK)
    _check_result(result, ["d5b3", "auto"], ["specinfer", "optimal"])
    assert [r["nodes"] for r in result["target_forward"]] == [1, 8, 121]
    assert [r["nodes"] for r in result["draft_level"]] == [1, 3, 9, 27]  # the levels d5b3's drafter forwards
    assert all(r["syncs_per_step"] > 0 for r in result["engine"])
    text = done.stdout
    for needle in (
        "target forward over n tree nodes",
        "draft forward of one level",
        "overhead",
        "GPU goal, d5b3 specinfer step / its 121-node target forward",
        "elapsed: ",
        "engine check (greedy tree decoding = transformers' greedy generation",
    ):
        assert needle in text
    assert "not decided (this run is cpu at scale tiny" in text
    assert "overhead share auto (" in text and f"{'d5b3':<7}{121:>4} {'specinfer':<14}" in text


@pytest.mark.slow
def test_bench_gpu_default_configuration_on_the_cpu(tmp_path):
    """Every tree and method of the default run, at tiny scale."""
    _, result = _bench(tmp_path)
    _check_result(result, gpu.TREES.split(","), gpu.METHODS.split(","))
    assert [r["nodes"] for r in result["target_forward"]] == list(gpu.NODES)


def test_missing_and_old_packages_are_named(monkeypatch):
    import importlib.metadata

    versions = {"torch": "2.4.1", "numpy": "2.0.0", "PyYAML": "6.0"}

    def version(dist):
        if dist not in versions:
            raise importlib.metadata.PackageNotFoundError(dist)
        return versions[dist]

    monkeypatch.setattr(importlib.metadata, "version", version)
    problems = gpu.check_requirements()
    assert any(p.startswith("torch 2.4.1: need >= 2.6 (torch.accelerator") for p in problems)
    assert any(p.startswith("transformers: missing") for p in problems)
    assert len(problems) == 2
    monkeypatch.setattr(gpu, "check_requirements", lambda: ["transformers: missing (needed for x)"])
    assert gpu.main(["--device", "cpu"]) == 2


def test_a_cuda_request_without_a_gpu_says_what_to_run(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="--device cpu --scale tiny"):
        gpu._device(gpu._args([]))


def test_a_failed_engine_check_stops_before_timing(tmp_path, monkeypatch, capsys):
    """An engine that does not work on the machine's transformers is not timed (exit 3, JSON kept)."""
    failed = {"ok": False, "engine": [1], "transformers": [2], "cache_keyword": "cache"}
    monkeypatch.setattr(gpu, "_engine_check", lambda device, seed, compile_mode: failed)
    out = tmp_path / "gpu.json"
    assert gpu.main(["--device", "cpu", "--scale", "tiny", "--json", str(out)]) == 3
    assert "does not reproduce transformers' greedy generation" in capsys.readouterr().err
    saved = json.loads(out.read_text())
    assert saved["engine_check"] == failed and not saved["complete"] and "engine" not in saved


def test_the_bench_import_chain_needs_only_torch_numpy_and_yaml():
    """Importing every module the bench calls (engine, verifiers, host-sync counter, tree specs, published
    configs) adds no third-party package beyond numpy and PyYAML to what torch itself imports;
    transformers comes later, when the models are built."""
    modules = [
        "resispec.bench.gpu",
        "resispec.bench.gpu_pair",
        "resispec.bench.gpu_timing",
        "resispec.bench.gpu_report",
        "resispec.bench.gpu_compat",
        "resispec.decoding.engine",
        "resispec.decoding.host_syncs",
        "resispec.decoding.tree_specs",
        "resispec.verify",
        "resispec.decoding.pair_profile",
        "resispec.models.published",
    ]
    code = (
        "import sys, importlib, torch\n"
        "before = {m.split('.')[0] for m in sys.modules}\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "after = {m.split('.')[0] for m in sys.modules} - before - set(sys.stdlib_module_names)\n"
        "print(sorted(m for m in after if not m.startswith('_') and m != 'resispec'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    added = set(eval(done.stdout)) - {"cython_runtime"}  # noqa: S307 - a list printed by the child
    assert added <= {"numpy", "yaml"}  # cython_runtime: the module Cython extensions create, no package
