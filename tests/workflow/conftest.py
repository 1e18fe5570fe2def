"""One local run of the whole `.test` workflow per test session, for the end-to-end tests, with one
decoding job made to fail once (`testing.fail_once_dir`, `fail_once_runs`) and retried."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from slurm_helpers import REPO, copy_workflow, run_snakemake
from workflow_helpers import TEST_CONFIG, clean_env


@dataclass(frozen=True)
class LocalRun:
    directory: Path
    log: str


@pytest.fixture(scope="session")
def local_test_run(tmp_path_factory) -> LocalRun:
    directory = copy_workflow(REPO, tmp_path_factory.mktemp("test-workflow") / "local")
    log = run_snakemake(
        ["--cores", "2", "--retries", "1", *TEST_CONFIG], directory, clean_env(), 3600, "snakemake.log"
    )
    return LocalRun(directory, log)
