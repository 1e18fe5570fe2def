"""The dry-run DAG of every configuration holds a job for every table and figure, offline."""

import re

import pytest
from workflow_helpers import REPO, TABLES, snakemake


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
        "audit_decode",
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
    """A timing-pass job asks for every core Snakemake may use, so no other job runs beside it; the audit
    pass and the CPU rules keep the configured threads."""
    plan = snakemake(["-n", "--forceall", "--cores", "3", "--configfile", ".test/config.yaml"], REPO).stdout
    threads = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", plan):
        match = re.match(r"(?:local)?rule (\w+):", block)
        found = re.search(r"^\s+threads: (\d+)$", block, re.MULTILINE)
        if match:  # Snakemake prints no threads line for one thread
            threads.setdefault(match.group(1), set()).add(int(found.group(1)) if found else 1)
    assert threads["decode"] == {3} and threads["audit_decode"] == {1} and threads["exactness"] == {1}
