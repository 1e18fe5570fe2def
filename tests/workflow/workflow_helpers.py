"""Running the workflow from tests: the shared settings of the `.test` runs, and Snakemake as a
subprocess of this interpreter (so the package under test is the one it uses)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TABLES = [f"table{i}" for i in range(1, 7)] + ["figure1", "figure3"]
FAIL_ONCE = "fail_once"  # testing.fail_once_dir, relative to the working directory of each run
# The `.test` configuration of the shared local run and the SLURM run: every decode job fails once.
TEST_CONFIG = ["--configfile", ".test/config.yaml", "--config", f"testing={{fail_once_dir: {FAIL_ONCE}}}"]


def clean_env() -> dict:
    """The environment without user SLURM/profile settings, with the offline corpus samples."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "RESISPEC_SLURM_")) and k != "SNAKEMAKE_PROFILE"
    }
    data = REPO.parent / "shared" / "data"
    if "RESISPEC_DATA_DIR" not in env and data.is_dir():
        env["RESISPEC_DATA_DIR"] = str(data)
    return env


def snakemake(
    args: list[str], cwd: Path, *, timeout: float = 900, check: bool = True
) -> subprocess.CompletedProcess:
    env = clean_env()
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        )
    return result
