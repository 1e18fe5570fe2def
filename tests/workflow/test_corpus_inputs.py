"""Real Snakemake runs of the `.test` workflow on a local corpus directory: a short corpus stops the
prompt job naming the corpus file, with the traceback in the job's log; fixing the file reruns the
prompts (the corpus file is an input of the prompt rule); with data.allow_fewer_prompts the runs are
named after the prompts there really are."""

import json
import re
import subprocess
import sys

import pytest
from slurm_helpers import REPO, copy_workflow
from workflow_helpers import clean_env

pytestmark = pytest.mark.slow
SHARED = REPO.parent / "shared" / "data"
PROMPTS = ".test/results/prompts/tiny-target/c4.jsonl"
LOG = ".test/results/logs/prepare_data/tiny-target/c4.log"


def documents(count: int, word: str = "document") -> str:
    return "".join(
        json.dumps({"id": f"d{i}", "text": f"{word} number {i} " * 8}) + "\n" for i in range(count)
    )


@pytest.fixture
def workdir(tmp_path):
    if not SHARED.is_dir():
        pytest.skip("shared corpus samples not present")
    workdir = copy_workflow(REPO, tmp_path / "workflow")
    data = tmp_path / "data"
    data.mkdir()
    for name in ("cnn_dailymail", "openwebtext"):
        (data / f"{name}.jsonl.gz").symlink_to(SHARED / f"{name}.jsonl.gz")
    (workdir / "local.yaml").write_text(json.dumps({"data": {"dir": str(data)}}))
    return workdir


def snakemake(workdir, *args: str) -> subprocess.CompletedProcess:
    configs = ["--configfile", ".test/config.yaml", "local.yaml"]  # last: it takes every word after it
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args, "--cores", "1", *configs],
        cwd=workdir,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_short_corpus_fails_naming_it_and_fixing_it_reruns(workdir):
    corpus = workdir.parent / "data" / "c4.jsonl"
    corpus.write_text(documents(1))
    failed = snakemake(workdir, PROMPTS)
    assert failed.returncode != 0
    log = (workdir / LOG).read_text()
    assert "Traceback" in log and f"{corpus} holds 1 documents, fewer than the 2 prompts asked" in log, log
    corpus.write_text(documents(3))  # fixed: the same command rebuilds the prompts
    fixed = snakemake(workdir, PROMPTS)
    assert fixed.returncode == 0, fixed.stderr[-4000:]
    assert len((workdir / PROMPTS).read_text().splitlines()) == 2
    corpus.write_text(documents(3, "changed"))  # a changed corpus file reruns its prompts
    plan = snakemake(workdir, "-n", PROMPTS)
    assert re.search(r"^rule prepare_data:", plan.stdout, re.MULTILINE), plan.stdout[-3000:]


def test_fewer_documents_when_allowed_name_the_runs_after_the_real_count(workdir):
    (workdir.parent / "data" / "c4.jsonl").write_text(documents(1))
    overlay = json.loads((workdir / "local.yaml").read_text())
    overlay["data"]["allow_fewer_prompts"] = True
    (workdir / "local.yaml").write_text(json.dumps(overlay))
    plan = snakemake(workdir, "-n").stdout
    runs = set(re.findall(r"raw/(\w+?_T[\d.]+_\S+?)\.jsonl", plan))
    c4 = {run for run in runs if run.startswith("c4_")}
    assert c4 and all(run.endswith("_n1") for run in c4), sorted(c4)
    assert all(run.endswith("_n2") for run in runs - c4), sorted(runs - c4)
    run = min(c4, key=lambda name: ("tiny-draft-small" not in name, name))  # the quickest draft to train
    decoded = snakemake(workdir, f".test/results/raw/{run}.jsonl")
    assert decoded.returncode == 0, decoded.stderr[-4000:]
    records = [
        json.loads(line) for line in (workdir / f".test/results/raw/{run}.jsonl").read_text().splitlines()
    ]
    assert {r["prompt_id"] for r in records} == {"d0"}
