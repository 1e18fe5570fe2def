"""Dress rehearsal of config/paper.yaml: every job of the paper's DAG, offline, through the real `hf:`
path, on stand-ins of the paper's hub models in a Hugging Face cache (`resispec rehearsal-cache`), with
only device, prompt/token counts and budgets overridden (config/paper-rehearsal.yaml)."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from slurm_helpers import REPO, copy_workflow, run_snakemake
from workflow_helpers import TABLES, clean_env, snakemake

CONFIGS = ["--configfile", "config/paper.yaml", "config/paper-rehearsal.yaml"]  # one flag: Snakemake 9
RESULTS = "results/rehearsal"


def _job_counts(text: str) -> dict[str, int]:
    """The `Job stats` table of a Snakemake log (the last one), rule -> count."""
    table = text.rsplit("Job stats:", 1)[1].split("total", 1)[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.MULTILINE)}


def test_one_configfile_flag_layers_the_rehearsal_on_the_paper():
    """`--configfile A B` merges both; a repeated `--configfile` keeps only the last file (Snakemake 9)."""
    plan = snakemake(["-n", "--cores", "1", *CONFIGS], REPO, timeout=300).stdout
    assert f"{RESULTS}/models/llama-2-7b/READY.json" in plan and "smollm2" not in plan
    wrong = snakemake(
        ["-n", "--cores", "1", "--configfile", CONFIGS[1], "--configfile", CONFIGS[2]], REPO
    ).stdout
    assert "smollm2" in wrong  # the trap the rehearsal config's header warns about


def _leaves(mapping: dict, prefix: str = "") -> set[str]:
    keys = set()
    for key, value in mapping.items():
        keys |= _leaves(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}"}
    return keys


def test_the_rehearsal_overrides_only_device_counts_and_budgets():
    from resispec.workflow.config import load_configs

    overrides = _leaves(yaml.safe_load((REPO / "config" / "paper-rehearsal.yaml").read_text()))
    allowed = {"results_dir", "reports_dir", "device", "data.num_prompts", "data.prompt_tokens"}
    allowed |= {"data.max_new_tokens", "resources.mem_mb", "resources.runtime"}
    assert {key for key in overrides if not key.startswith("audit.")} <= allowed
    files = [REPO / "config" / name for name in ("config.yaml", "paper.yaml", "paper-rehearsal.yaml")]
    merged, paper = load_configs(files), load_configs(files[:2])
    assert merged["models"] == paper["models"] and merged["experiments"] == paper["experiments"]
    assert merged["dtype"] == paper["dtype"] == "float16" and merged["device"] == "cpu"


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory):
    directory = copy_workflow(REPO, tmp_path_factory.mktemp("rehearsal") / "workflow")
    home = directory.parent / "hf-home"
    env = {**clean_env(), "HF_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    env.pop("HF_HUB_CACHE", None)
    build = [
        sys.executable,
        "-m",
        "resispec",
        "rehearsal-cache",
        str(home),
        "--configfile",
        "config/paper.yaml",
    ]
    built = subprocess.run(build, cwd=directory, env=env, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-4000:]
    log = run_snakemake(["--cores", "2", *CONFIGS], directory, env, 3600, "rehearsal.log")
    return directory, home, log


@pytest.mark.slow
def test_every_job_of_the_paper_dag_ran(rehearsal):
    directory, _, log = rehearsal
    paper = snakemake(["-n", "--forceall", "--cores", "1", "--configfile", "config/paper.yaml"], REPO).stdout
    assert _job_counts(log) == _job_counts(paper)
    assert re.search(r"(\d+) of \1 steps \(100%\) done", log)


@pytest.mark.slow
def test_every_model_came_from_the_hub_cache(rehearsal):
    directory, home, _ = rehearsal
    models = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())["models"]
    for name, spec in models.items():
        ready = json.loads((directory / RESULTS / "models" / name / "READY.json").read_text())
        assert ready["source"] == spec["source"], name
        config = directory / RESULTS / "models" / name / "config.json"
        assert config.is_symlink() and str(config.resolve()).startswith(str(home / "hub")), name
        if spec.get("head_of"):
            assert ready["kind"] == "eagle" and ready["teacher"] == spec["head_of"]


@pytest.mark.slow
def test_tables_hold_every_paper_row_with_the_paper_trees(rehearsal):
    directory, _, _ = rehearsal
    logs = " ".join(p.read_text() for p in (directory / RESULTS / "logs" / "decode").glob("*.log"))
    assert "tree sequoia128x8: 128 nodes; device cpu, dtype float16" in logs
    for table in TABLES:
        with open(directory / RESULTS / "tables" / f"{table}.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))
        lines = (REPO / "config" / "paper" / f"{table}.tsv").read_text().splitlines()
        sheet = list(csv.DictReader((line for line in lines if not line.startswith("#")), delimiter="\t"))
        ours = {(r["row"], r["tree"], r["method"]) for r in rows if r["metric"] == "accepted_length"}
        for row in sheet:
            for method in row["methods"].split(","):
                assert (row["row"], row["tree"], method) in ours, (table, row["row"], method)


@pytest.mark.slow
def test_exact_methods_stay_exact_in_float16(rehearsal):
    directory, _, _ = rehearsal
    with open(directory / RESULTS / "tables" / "table4.csv", newline="") as handle:
        kl_max = [r for r in csv.DictReader(handle) if r["metric"] == "kl_max" and r["method"] == "specinfer"]
    assert kl_max and all(abs(float(r["mean"])) < 1e-9 for r in kl_max)


@pytest.mark.slow
def test_report_renders_with_the_paper_model_names(rehearsal):
    directory, _, _ = rehearsal
    html = (directory / "reports" / "rehearsal" / "report.html").read_text()
    names = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())["models"]
    missing = [name for name in names if name not in html]
    assert not missing, f"model names missing from the report: {missing}"
    assert os.path.getsize(directory / "reports" / "rehearsal" / "report.html") > 10_000
