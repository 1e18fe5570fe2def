"""The dry-run DAG of every configuration holds a job for every table and figure, offline."""

import json
import re

import pytest
from workflow_helpers import REPO, TABLES, snakemake

from resispec.models.precision import resolve_dtype


@pytest.mark.parametrize("configfile", [None, ".test/config.yaml", "config/paper.yaml"])
def test_dry_run_has_every_table_and_figure(configfile):
    args = ["-n", "--forceall", "--cores", "1"] + (["--configfile", configfile] if configfile else [])
    plan = snakemake(args, REPO, timeout=300).stdout
    for table in TABLES:
        assert re.search(rf"tables/{table}\.csv", plan), f"no aggregate job for {table} ({configfile})"
    rules = (
        "prepare_model",
        "prepare_data",
        "decode",
        "exactness",
        "aggregate",
        "paper_limits",
        "notebook",
        "report",
    )
    for rule in rules:
        assert re.search(rf"^{rule}\s+\d+$", plan, re.MULTILINE), f"no {rule} job ({configfile})"


def test_bad_sheet_stops_the_run_naming_row_and_column(tmp_path):
    sheet = tmp_path / "bad.tsv"
    lines = (REPO / ".test" / "experiments" / "table1.tsv").read_text().splitlines()
    lines[3] = lines[3].replace("\t1\t", "\twarm\t", 1)  # the second data row's temperature
    sheet.write_text("\n".join(lines) + "\n")
    result = snakemake(
        [
            "-n",
            "--cores",
            "1",
            "--configfile",
            ".test/config.yaml",
            "--config",
            f"experiments={{'table1': '{sheet}'}}",
        ],
        REPO,
        check=False,
    )
    assert result.returncode != 0
    assert re.search(r"bad\.tsv: row 2 \(\w+\) column 'temperature'", result.stdout + result.stderr)


def test_bad_config_key_stops_the_run_naming_the_key():
    result = snakemake(["-n", "--cores", "1", "--config", "thredas=2"], REPO, check=False)
    assert result.returncode != 0
    assert "config key 'thredas'" in result.stdout + result.stderr


def test_timed_jobs_take_every_core():
    """A timing-pass job asks for every core Snakemake may use, so no other job runs beside it; the CPU
    rules keep the configured threads."""
    plan = snakemake(["-n", "--forceall", "--cores", "3", "--configfile", ".test/config.yaml"], REPO).stdout
    threads = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", plan):
        match = re.match(r"(?:local)?rule (\w+):", block)
        found = re.search(r"^\s+threads: (\d+)$", block, re.MULTILINE)
        if match:  # Snakemake prints no threads line for one thread
            threads.setdefault(match.group(1), set()).add(int(found.group(1)) if found else 1)
    assert threads["decode"] == threads["baseline"] == {3} and threads["exactness"] == {1}


def test_the_environment_is_recorded_per_run_and_again_when_its_key_changes(tmp_path):
    """One record per run_name in results_dir/environment/, read by that run's report; a record made
    under another device (or host, or versions) is made again, and the paper configuration run after the
    default in the same results folder gets its own."""
    results = tmp_path / "results"
    base = ["--cores", "1", "--config", f"results_dir={results}"]
    snakemake(["info", *base], REPO, timeout=300)
    record = json.loads((results / "environment" / "embedded-cpu-default.json").read_text())
    assert record["run_name"] == "embedded-cpu-default" and record["device"] == "cpu" and record["torch"]
    assert record["dtype"] == f"auto: {resolve_dtype('auto', 'cpu')} here"  # the default's dtype, as it ran
    assert "Nothing to be done" in snakemake(["-n", "info", *base], REPO).stdout
    changed = snakemake(["-n", "info", *base, "dtype=bfloat16"], REPO).stdout
    assert re.search(r"environment/embedded-cpu-default\.json", changed) and "Params have changed" in changed
    paper = snakemake(["-n", "report", *base, "--configfile", "config/paper.yaml"], REPO).stdout
    assert re.search(r"environment/paper-gpu\.json", paper)
    assert re.search(r"^info\s+1$", paper, re.MULTILINE)


def test_every_job_writes_its_benchmark_file():
    """Every rule's jobs record their seconds in results/benchmarks/RULE/ (`python -m resispec.bench jobs`
    reads them: the job-time table of a run covers every job)."""
    plan = snakemake(["-n", "--forceall", "--cores", "2"], REPO).stdout
    blocks = [b for b in re.split(r"\n(?=(?:local)?rule \w+:)", plan) if re.match(r"(?:local)?rule \w+:", b)]
    rules = {re.match(r"(?:local)?rule (\w+):", block).group(1): block for block in blocks}
    assert {"prepare_model", "decode", "exactness", "aggregate", "report"} <= set(rules)
    for rule, block in rules.items():
        if rule != "all":
            assert re.search(rf"^\s+benchmark: results/benchmarks/{rule}/", block, re.MULTILINE), rule
