"""A resume file left by a killed decoding job is reused only by a job with the same inputs: kill a real
`resispec decode` run, without and with `--audit` (once each; each case starts from a copy of its resume
files), rerun it with another seed, method list, draft, prompts file or tree, and the published file
equals a clean run's of the new configuration (timings aside), with a log line naming what changed."""

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from slurm_helpers import strip_timing
from workflow_helpers import decode_args, tiny_decoding_dir

pytestmark = pytest.mark.slow


BASE = {"seed": 3, "methods": ["specinfer", "ers"], "draft": "d", "prompts": "prompts.jsonl", "tree": "d3b2"}
AUDIT = {"top_tokens": 16, "max_nodes": 24, "nodes_per_prompt": 4, "full_vocab_nodes": 2}

# (step: `decode`, or `audited` with --audit; changed input; what the discarding log line names): each
# row one stale resume file tried
CHANGES = [
    ("decode", {"seed": 4}, "settings.seed: 3 -> 4"),
    ("decode", {"methods": ["specinfer"]}, "job.methods: ['specinfer', 'ers'] -> ['specinfer']"),
    ("decode", {"methods": ["specinfer", "ers", "optimal"]}, "-> ['specinfer', 'ers', 'optimal']"),
    ("decode", {"draft": "d2"}, "draft_ready_sha256: "),
    ("decode", {"prompts": "prompts-fixed.jsonl"}, "prompts_sha256: "),
    ("decode", {"tree": "k2d3"}, "job.tree: 'd3b2' -> 'k2d3'"),
    ("audited", {"seed": 4}, "settings.seed: 3 -> 4"),
    ("audited", {"draft": "d2"}, "draft_ready_sha256: "),
    ("audited", {"methods": ["specinfer"]}, "job.methods: ['specinfer', 'ers'] -> ['specinfer']"),
]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    from resispec.corpora import write_prompts
    from resispec.models.tiny import build
    from resispec.workflow.steps.common import write_json

    root = tmp_path_factory.mktemp("fingerprints")
    prompts = tiny_decoding_dir(root, prompts=8, prompt_tokens=16, max_new_tokens=24)
    build("layers=1,hidden=32,seed=5", root / "d2")
    write_json(root / "d2" / "READY.json", {"kind": "source", "source": "tiny:layers=1,hidden=32,seed=5"})
    # the same prompt ids with other tokens: what a corrected corpus gives
    write_prompts(root / "prompts-fixed.jsonl", [dict(p, input_ids=p["input_ids"][1:]) for p in prompts])
    return root


def command(root: Path, step: str, out: str, inputs: dict) -> list[str]:
    job = {"run": "fingerprint-test", "target": "t", "dataset": "c4", "temperature": 1.0, "num_prompts": 8}
    job.update({key: inputs[key] for key in ("draft", "tree", "methods")})
    settings = {"seed": inputs["seed"], "device": "cpu", "dtype": "float32", "audit": AUDIT}
    extra = ["--audit", str(root / f"{out}.pt")] if step == "audited" else []
    args = decode_args(root, job, settings, prompts=inputs["prompts"], draft=inputs["draft"])
    return [
        sys.executable,
        "-m",
        "resispec",
        "decode",
        *args,
        "--records",
        str(root / f"{out}.jsonl"),
        *extra,
    ]


def kill_after_first_record(cmd: list[str], partial: Path) -> None:
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if partial.exists() and partial.read_text().count("\n") >= 1:
            break
        time.sleep(0.01)
    assert process.poll() is None, "the job finished before it could be killed; make it longer"
    process.send_signal(signal.SIGKILL)
    process.wait()


@pytest.fixture(scope="module")
def killed(root):
    """One killed job of the BASE configuration per step (its resume files, copied by each case: they
    name no path, so every case starts from the same stale state)."""
    made = {}

    def resume_files(step: str) -> list[Path]:
        if step not in made:
            kill_after_first_record(
                command(root, step, f"killed-{step}", BASE), root / f"killed-{step}.jsonl.partial"
            )
            made[step] = sorted(root.glob(f"killed-{step}.*partial*"))
            assert not (root / f"killed-{step}.jsonl").exists() and len(made[step]) >= 2, made[step]
        return made[step]

    return resume_files


def published(root: Path, out: str, step: str) -> tuple[list[dict], list | None]:
    records = [strip_timing(json.loads(line)) for line in (root / f"{out}.jsonl").read_text().splitlines()]
    nodes = torch.load(root / f"{out}.pt", weights_only=True)["nodes"] if step == "audited" else None
    return records, nodes


@pytest.mark.parametrize(("step", "change", "named"), CHANGES)
def test_stale_resume_file_is_discarded_naming_the_change(root, killed, step, change, named):
    name = step + re.sub(r"\W+", "-", json.dumps(change, sort_keys=True)).rstrip("-")
    new = {**BASE, **change}
    subprocess.run(command(root, step, f"clean-{name}", new), check=True, capture_output=True, timeout=600)
    for stale in killed(step):  # killed-{step}.jsonl.partial (+ .fingerprint.json, the audit's partial)
        shutil.copy(stale, root / stale.name.replace(f"killed-{step}.", f"killed-{name}.", 1))
    partial = root / f"killed-{name}.jsonl.partial"
    assert partial.exists() and not (root / f"killed-{name}.jsonl").exists()
    rerun = subprocess.run(
        command(root, step, f"killed-{name}", new), check=True, capture_output=True, text=True, timeout=600
    )
    log = rerun.stdout + rerun.stderr
    assert f"discarding the resume file {partial}" in log and named in log, log[-3000:]
    assert ", 0 done" in log
    assert published(root, f"killed-{name}", step) == published(root, f"clean-{name}", step)
    assert not partial.exists() and not Path(f"{partial}.fingerprint.json").exists()


def test_resume_file_without_fingerprint_is_discarded(root):
    """A `.partial` of unknown provenance (an older version, a hand edit) is never trusted."""
    subprocess.run(
        command(root, "decode", "clean-legacy", BASE), check=True, capture_output=True, timeout=600
    )
    partial = root / "legacy.jsonl.partial"
    partial.write_text(json.dumps({"method": "specinfer", "prompt_id": "stray", "new_tokens": [1]}) + "\n")
    rerun = subprocess.run(
        command(root, "decode", "legacy", BASE), check=True, capture_output=True, text=True, timeout=600
    )
    assert "it has no fingerprint" in rerun.stderr + rerun.stdout
    assert published(root, "legacy", "decode") == published(root, "clean-legacy", "decode")


def test_stray_records_stop_publishing_naming_the_file(tmp_path):
    """Records of another method or prompt in a resume file: a clear error, not a KeyError."""
    from resispec.workflow.run_files import RunFiles

    files = RunFiles(str(tmp_path / "run.jsonl"))
    files.append({"method": "sequoia", "prompt_id": "p0"})
    with pytest.raises(
        ValueError, match=r"run.jsonl.partial: records of \(method, prompt\) \('sequoia', 'p0'\)"
    ):
        files.publish({"methods": ["specinfer"]}, [{"prompt_id": "p0"}])
