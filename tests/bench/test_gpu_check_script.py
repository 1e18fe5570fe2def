"""``scripts/gpu-check.sh``: both passes of the GPU check (eager matrix, compiled goals' tree), run here on
the CPU at tiny scale through the script's own argument forwarding, each writing its JSON and log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
QUICK = [
    "--device",
    "cpu",
    "--scale",
    "tiny",
    "--threads",
    "1",
    "--nodes",
    "1,121",
    "--repeats",
    "2",
    "--warmup",
    "1",
    "--new-tokens",
    "8",
    "--warmup-tokens",
    "3",
]


def _run_script(tmp_path, env, args=(), timeout=900):
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu-check.sh"), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_both_passes_write_their_results(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "PYTHON": sys.executable}
    done = _run_script(tmp_path, env, [*QUICK, "--methods", "specinfer"])
    assert done.returncode == 0, done.stderr[-3000:]
    eager = json.loads((tmp_path / "gpu-eager.json").read_text())
    compiled = json.loads((tmp_path / "gpu-compiled.json").read_text())
    assert eager["complete"] and compiled["complete"]
    assert eager["settings"]["compile"] == "none"  # the matrix runs eagerly unless told otherwise
    assert compiled["settings"]["compile"] == "reduce-overhead"
    assert {r["tree"] for r in eager["engine"]} == {"d5b3", "d7b2", "d4b5", "d3b11", "auto"}
    assert [(r["tree"], r["method"]) for r in compiled["engine"]] == [("d5b3", "specinfer")]
    assert compiled["engine"][0]["syncs_per_step"] is None  # not counted again in the compiled pass
    assert "engine compile mode: none (eager)" in (tmp_path / "gpu-eager.log").read_text()
    assert "engine compile mode: reduce-overhead" in (tmp_path / "gpu-compiled.log").read_text()
    assert "[gpu-check] compiled: exit 0" in done.stderr


def test_a_failing_pass_sets_the_exit_status(tmp_path):
    """No CUDA here: the default device stops each pass with its message, and the script exits non-zero."""
    env = {**os.environ, "OUT": str(tmp_path), "PYTHON": sys.executable, "CUDA_VISIBLE_DEVICES": ""}
    done = _run_script(tmp_path, env, timeout=300)
    assert done.returncode != 0
    assert "sees no CUDA GPU" in (tmp_path / "gpu-eager.log").read_text()
    assert "[gpu-check] eager: exit 1" in done.stderr and "[gpu-check] compiled: exit" in done.stderr


def test_both_passes_share_one_inductor_cache_under_the_output(tmp_path):
    """A fake python records each pass's TORCHINDUCTOR_CACHE_DIR: one directory, under $OUT, for both."""
    fake = tmp_path / "fake-python"
    fake.write_text('#!/usr/bin/env bash\necho "$TORCHINDUCTOR_CACHE_DIR" >> "$OUT/cache-dirs"\n')
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}
    env |= {"OUT": str(tmp_path / "out"), "PYTHON": str(fake)}
    done = _run_script(tmp_path, env, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    dirs = (tmp_path / "out" / "cache-dirs").read_text().split()
    assert dirs == [str(tmp_path / "out" / "inductor-cache")] * 2
    assert (tmp_path / "out" / "inductor-cache").is_dir()
