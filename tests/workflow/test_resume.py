"""A decoding job killed half-way resumes from its last finished prompt: nothing lost, nothing
duplicated, and the records equal those of an uninterrupted run (timings aside)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from resispec.corpora import build_prompts, load_corpus, write_prompts
from resispec.models.loading import load_tokenizer
from resispec.models.tiny import build
from resispec.workflow.steps.common import write_json

TIMINGS = {"wall_s", "time_draft_s", "time_target_s", "time_verify_s", "shaping_time_s"}
JOB = {
    "run": "resume-test", "target": "t", "draft": "d", "dataset": "c4", "temperature": 1.0,
    "tree": "d3b2", "num_prompts": 12, "methods": ["specinfer", "ers"],
}  # fmt: skip


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume")
    for name, spec in (("t", "layers=2,hidden=64,seed=1"), ("d", "layers=1,hidden=32,seed=2")):
        build(spec, root / name)
        write_json(root / name / "READY.json", {"kind": "source", "source": f"tiny:{spec}"})
    rows = load_corpus("c4", 12, data_dir=os.environ.get("RESISPEC_DATA_DIR"))
    prompts = build_prompts(
        rows, load_tokenizer(root / "t"), prompt_tokens=16, max_new_tokens=24, dataset="c4"
    )
    write_prompts(root / "prompts.jsonl", prompts)
    return root


def decode_cmd(root: Path, out: str) -> list[str]:
    settings = {"seed": 3, "device": "cpu", "dtype": "float32", "audit": {"top_tokens": 16, "max_nodes": 40}}
    return [
        sys.executable, "-m", "resispec", "decode", "--prompts", str(root / "prompts.jsonl"),
        "--target", str(root / "t" / "READY.json"), "--draft", str(root / "d" / "READY.json"),
        "--records", str(root / f"{out}.jsonl"), "--audit", str(root / f"{out}.pt"),
        "--job", json.dumps(JOB), "--settings", json.dumps(settings), "--threads", "1",
    ]  # fmt: skip


def without_timings(path: Path) -> list[dict]:
    return [
        {k: v for k, v in json.loads(line).items() if k not in TIMINGS}
        for line in path.read_text().splitlines()
    ]


def test_killed_decode_resumes_without_loss_or_duplicates(setup):
    root = setup
    subprocess.run(decode_cmd(root, "straight"), check=True, capture_output=True, timeout=600)
    partial = root / "killed.jsonl.partial"
    process = subprocess.Popen(
        decode_cmd(root, "killed"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
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
    assert 5 <= finished_before < 24
    assert not (root / "killed.jsonl").exists(), "a killed job must not publish its output"
    resumed = subprocess.run(
        decode_cmd(root, "killed"), check=True, capture_output=True, text=True, timeout=600
    )
    assert f"{finished_before} done" in resumed.stderr + resumed.stdout
    straight, killed = without_timings(root / "straight.jsonl"), without_timings(root / "killed.jsonl")
    keys = [(r["method"], r["prompt_id"]) for r in killed]
    assert len(keys) == len(set(keys)) == 24, "records lost or duplicated"
    assert killed == straight, "a resumed job must produce exactly the uninterrupted job's records"
    assert not partial.exists()
