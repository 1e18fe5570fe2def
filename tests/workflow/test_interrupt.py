"""Ctrl-C during a real Snakemake run of the `.test` workflow, then the README's local command again:
it resumes (no IncompleteFilesException; the interrupted decoding job resumes from its `.partial`
records) because the workflow profile `profiles/default`, which Snakemake applies by itself, sets
`rerun-incomplete`."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from slurm_helpers import REPO, copy_workflow, sigint_as_in_a_terminal
from workflow_helpers import clean_env

pytestmark = pytest.mark.slow
RUN = "cnn_dailymail_T1_d3b2_tiny-target_tiny-draft-small_n2"
# Longer generations than `.test`'s 8 tokens, so that the decoding job is still running at the interrupt.
OVERLAY = {"data": {"max_new_tokens": 64}}


def command(target: str) -> list[str]:
    """README: `.venv/bin/snakemake --cores 2`, on the `.test` configuration and one run's records."""
    configs = ["--configfile", ".test/config.yaml", "longer.yaml"]  # last: it takes every word after it
    return [sys.executable, "-m", "snakemake", target, "--cores", "2", *configs]


def test_ctrl_c_then_the_same_command_resumes(tmp_path):
    workdir = copy_workflow(REPO, tmp_path / "workflow")
    (workdir / "longer.yaml").write_text(json.dumps(OVERLAY))
    target = f".test/results/raw/{RUN}.jsonl"
    partial = workdir / f"{target}.partial"
    # its own process group, as a terminal's foreground job, and SIGINT not ignored, as there
    with open(tmp_path / "first.log", "w") as log, sigint_as_in_a_terminal():
        first = subprocess.Popen(
            command(target),
            cwd=workdir,
            env=clean_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 1200
        while time.monotonic() < deadline and first.poll() is None:
            if partial.exists() and partial.read_text().count("\n") >= 1:
                break
            time.sleep(0.05)
        assert first.poll() is None, (tmp_path / "first.log").read_text()[-4000:]
        os.killpg(first.pid, signal.SIGINT)  # Ctrl-C: SIGINT to the whole foreground process group
        first.wait(timeout=300)
    assert first.returncode != 0 and not (workdir / target).exists()
    finished = partial.read_text().count("\n")
    assert finished >= 1
    again = subprocess.run(
        command(target), cwd=workdir, env=clean_env(), capture_output=True, text=True, timeout=1200
    )
    output = again.stdout + again.stderr
    assert again.returncode == 0, output[-6000:]
    assert "IncompleteFilesException" not in output and "profiles/default" in output
    job_log = (workdir / f".test/results/logs/decode/{RUN}.log").read_text()
    resumed = [line for line in job_log.splitlines() if "(timing pass)" in line][-1]
    done = int(resumed.rsplit(", ", 1)[1].split()[0])
    assert done >= finished - 1, resumed  # at most the record being written at the interrupt is redone
    assert "discarding the resume file" not in job_log
    records = [json.loads(line) for line in (workdir / target).read_text().splitlines()]
    keys = [(r["method"], r["prompt_id"]) for r in records]
    assert len(keys) == len(set(keys)) == 2 * len({method for method, _ in keys})  # 2 prompts x methods
