"""A decoding job killed half-way resumes from its last finished prompt: nothing lost, nothing
duplicated, and the records equal those of an uninterrupted run (timings aside)."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from slurm_helpers import strip_timing
from workflow_helpers import decode_args, tiny_decoding_dir

JOB = {
    "run": "resume-test",
    "target": "t",
    "draft": "d",
    "dataset": "c4",
    "temperature": 1.0,
    "tree": "d3b2",
    "num_prompts": 12,
    "methods": ["specinfer", "ers"],
}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    tiny_decoding_dir(root, prompts=12, prompt_tokens=16, max_new_tokens=24)
    return root


def decode_cmd(root: Path, out: str, audit: bool = False) -> list[str]:
    """The timing pass (`decode`), with ``audit`` keeping the audit's nodes (10 prompts of 4 nodes, 2
    methods)."""
    sampling = {"top_tokens": 16, "max_nodes": 40, "nodes_per_prompt": 4, "full_vocab_nodes": 2}
    settings = {"seed": 3, "device": "cpu", "dtype": "float32", "audit": sampling}
    extra = ["--audit", str(root / f"{out}.pt")] if audit else []
    records = ["--records", str(root / f"{out}.jsonl")]
    return [sys.executable, "-m", "resispec", "decode", *decode_args(root, JOB, settings), *records, *extra]


def without_timings(path: Path) -> list[dict]:
    return [strip_timing(json.loads(line)) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("audit", [False, True])
def test_killed_decode_resumes_without_loss_or_duplicates(setup, audit):
    root, records = setup, 24
    straight_run, killed_run = f"straight-{audit}", f"killed-{audit}"
    subprocess.run(decode_cmd(root, straight_run, audit), check=True, capture_output=True, timeout=600)
    partial = root / f"{killed_run}.jsonl.partial"
    process = subprocess.Popen(
        decode_cmd(root, killed_run, audit), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if partial.exists() and len(partial.read_text().splitlines()) >= 5:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the job finished before it could be killed; make it longer"
    process.send_signal(signal.SIGKILL)
    process.wait()
    finished_before = len(partial.read_text().splitlines())
    assert 5 <= finished_before < records
    assert not (root / f"{killed_run}.jsonl").exists(), "a killed job must not publish its output"
    resumed = subprocess.run(
        decode_cmd(root, killed_run, audit), check=True, capture_output=True, text=True, timeout=600
    )
    assert f"{finished_before} done" in resumed.stderr + resumed.stdout
    straight, killed = (
        without_timings(root / f"{straight_run}.jsonl"),
        without_timings(root / f"{killed_run}.jsonl"),
    )
    keys = [(r["method"], r["prompt_id"]) for r in killed]
    assert len(keys) == len(set(keys)) == records, "records lost or duplicated"
    assert killed == straight, "a resumed job must produce exactly the uninterrupted job's records"
    assert not partial.exists()
    if audit:  # the audited nodes too, full rows included
        nodes = [
            torch.load(root / f"{name}.pt", weights_only=True)["nodes"] for name in (straight_run, killed_run)
        ]
        assert nodes[0] == nodes[1] and any("full" in node for node in nodes[0])
