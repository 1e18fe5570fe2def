"""Running the workflow from tests: the shared settings of the `.test` runs, and Snakemake as a
subprocess of this interpreter (so the package under test is the one it uses)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TABLES = [f"table{i}" for i in range(1, 7)] + ["figure1", "figure3"]
# Rules whose jobs may need an accelerator: each declares a `gpu` resource; the SLURM profile sets one.
GPU_RULES = frozenset({"teacher", "prepare_model", "profile_pair", "decode", "baseline"})
FAIL_ONCE = "fail_once"  # testing.fail_once_dir, relative to the working directory of each run
# The run (in Table 2 and Figure 3) whose decode job fails once in the shared local run and the SLURM run.
FAIL_ONCE_RUN = "cnn_dailymail_T1_sequoia16x4_tiny-target_tiny-draft_n2"
# The `.test` configuration of the shared local run and the SLURM run.
TESTING = f"testing={{fail_once_dir: {FAIL_ONCE}, fail_once_runs: '^{FAIL_ONCE_RUN}$'}}"
TEST_CONFIG = ["--configfile", ".test/config.yaml", "--config", TESTING]


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


def tiny_decoding_dir(root: Path, prompts: int, prompt_tokens: int, max_new_tokens: int) -> list[dict]:
    """A tiny target ``t`` and draft ``d`` (READY.json each) and ``prompts.jsonl`` of ``prompts`` C4
    prompts under ``root``, for running `resispec decode` directly; returns the prompts."""
    from resispec.corpora import build_prompts, load_corpus, write_prompts
    from resispec.models.loading import load_tokenizer
    from resispec.models.tiny import build
    from resispec.workflow.steps.common import write_json

    for name, spec in (("t", "layers=2,hidden=64,seed=1"), ("d", "layers=1,hidden=32,seed=2")):
        build(spec, root / name)
        write_json(root / name / "READY.json", {"kind": "source", "source": f"tiny:{spec}"})
    rows = load_corpus("c4", prompts, data_dir=clean_env().get("RESISPEC_DATA_DIR"))
    tokenizer = load_tokenizer(root / "t")
    out = build_prompts(
        rows, tokenizer, prompt_tokens=prompt_tokens, max_new_tokens=max_new_tokens, dataset="c4"
    )
    write_prompts(root / "prompts.jsonl", out)
    return out


# audit.aggregate.node_extremes: rows only where some audited node's law is exact (law_err = 0)
NODE_EXTREMES = frozenset({"kl_max", "max_excess_over_alpha_star", "max_excess_over_bound"})


def outputs_manifest(project: Path) -> dict:
    """What a finished run shows a reader, by name: the report's sections, the figures and paper tables
    under reports/, and the metrics of every (table, row, method) of the tidy tables (values aside; a
    row's metric list is an index into ``metric_lists``). ``position_acceptance_<i>`` names count as one,
    ``position_acceptance_k``, and the worst-node metrics (``NODE_EXTREMES``) are left out: which sibling
    positions a run tried, and whether any audited node's law was computed without pruning, are data (the
    trained models), not the tables' layout."""
    import csv
    import re

    reports, tables = project / "reports", project / "results" / "tables"
    metrics: dict[tuple, set] = {}
    for path in sorted(tables.glob("*.csv")):
        with open(path, newline="") as handle:
            for r in csv.DictReader(handle):
                key = (path.stem, r.get("row") or r.get("table", ""), r.get("method", ""))
                name = r.get("metric") or r.get("convention", "")
                name = re.sub(r"^(position_acceptance)_\d+$", r"\1_k", name)
                metrics.setdefault(key, set()).update({name} - NODE_EXTREMES)
    lists = sorted({tuple(sorted(m)) for m in metrics.values()})
    jobs: dict[str, dict] = {}
    for (table, row, method), names in sorted(metrics.items()):
        jobs.setdefault(table, {}).setdefault(row, {})[method] = lists.index(tuple(sorted(names)))
    html = (reports / "report.html").read_text()
    return {
        "report_sections": re.findall(r"<h[23][^>]*>([^<]*)", html),
        "figures": sorted(p.name for p in (reports / "figures").iterdir()),
        "paper_tables": sorted(p.name for p in (reports / "tables").iterdir()),
        "metric_lists": [list(m) for m in lists],
        "tidy_jobs": jobs,
    }


def decode_args(
    root: Path, job: dict, settings: dict, *, prompts: str = "prompts.jsonl", draft: str = "d"
) -> list[str]:
    """The inputs of `resispec decode` over a ``tiny_decoding_dir`` (prompts, target
    ``t``, ``draft``, the job and settings as JSON, one thread); the caller adds ``--records`` (and
    ``--audit``)."""
    return [
        "--prompts",
        str(root / prompts),
        "--target",
        str(root / "t" / "READY.json"),
        "--draft",
        str(root / draft / "READY.json"),
        "--job",
        json.dumps(job),
        "--settings",
        json.dumps(settings),
        "--threads",
        "1",
    ]
