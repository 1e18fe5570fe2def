"""Helpers of tests/workflow/test_slurm.py: running Snakemake, reading its SLURM log, and comparing
the result trees of two runs up to timing fields."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import re
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
# Directories of a repository copy that a workflow run does not need (or must not inherit).
COPY_IGNORE = {".git", ".venv", ".snakemake", "results", "logs", "src", "tests", "__pycache__"}
COPY_IGNORE |= {".pytest_cache", ".ruff_cache", ".whl", ".gl", ".ipynb_checkpoints"}
# Result sub-directories whose content legitimately differs between runs.
SKIP_DIRS = {"logs", "benchmarks"}
# Keys, columns and cell values that name timings (wall_s, time_draft_s, throughput, speedup_vs_*, ...)
# or the machine a record was measured on (threads: a local timed job takes every core, a SLURM job its
# own allocation; hostname; load_average, the machine's load while a model trained).
TIMING = re.compile(
    r"(^|_)(time|times|timing|wall|elapsed|duration|seconds|timestamp|date|datetime|throughput|speedup"
    r"|threads|hostname|load)(_|$)|_s$|^eta$",
    re.IGNORECASE,
)


@contextlib.contextmanager
def sigint_as_in_a_terminal():
    """Children spawned inside take Ctrl-C (SIGINT) as a terminal's foreground job does, even where this
    test process was started with SIGINT ignored: a shell without job control starts its background
    commands that way (`bash script &`), an ignored signal stays ignored across exec, and Snakemake, a
    Python program, then never sees the KeyboardInterrupt it stops on. Caught here, it is default there."""
    ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def copy_workflow(source: Path, dest: Path) -> Path:
    """Copy a workflow directory without outputs, caches and virtual environments."""

    def ignore(directory: str, names: list[str]) -> set[str]:
        ignored = {n for n in names if n in COPY_IGNORE or n.endswith(".pyc")}
        if Path(directory).name == ".test":
            ignored |= {"results", "reports", "logs", ".snakemake"}
        return ignored

    shutil.copytree(source, dest, ignore=ignore, symlinks=True)
    return dest


def run_snakemake(args: list[str], cwd: Path, env: dict, timeout: float, log_name: str) -> str:
    """Run Snakemake to completion and return its log; on timeout stop it with SIGINT (Snakemake
    ignores SIGTERM while waiting for SLURM jobs, SIGINT makes it cancel them), then SIGKILL."""
    log_path = cwd / log_name
    with open(log_path, "w") as log:
        with sigint_as_in_a_terminal():  # the timeout below stops it with SIGINT
            process = subprocess.Popen(
                [sys.executable, "-m", "snakemake", *args],
                cwd=cwd,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            rc = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            rc = f"timeout after {timeout} s"
    text = log_path.read_text()
    if rc != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({rc}); log tail:\n{text[-6000:]}")
    return text


@dataclass
class SlurmLog:
    """What the main Snakemake process logged about its SLURM jobs."""

    run_id: str
    submissions: dict[str, list[tuple[str, Path]]] = field(default_factory=dict)  # job -> (slurm id, log)
    finished: dict[str, str] = field(default_factory=dict)  # snakemake job id -> rule
    failed_slurm_ids: set[str] = field(default_factory=set)

    @classmethod
    def parse(cls, text: str) -> SlurmLog:
        match = re.search(r"SLURM run ID: (\S+)", text)
        if match is None:
            raise AssertionError("no 'SLURM run ID' in the Snakemake log: did it use the SLURM executor?")
        parsed = cls(run_id=match.group(1))
        for job, slurm_id, path in re.findall(
            r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (.+?)\)\.?$", text, re.MULTILINE
        ):
            parsed.submissions.setdefault(job, []).append((slurm_id, Path(path)))
        parsed.finished = dict(re.findall(r"Finished jobid: (\d+) \(Rule: (\w+)\)", text))
        parsed.failed_slurm_ids = set(re.findall(r"SLURM-job '(\d+)' failed", text))
        return parsed


def rule_counts(text: str) -> dict[str, int]:
    """Jobs per rule that a Snakemake run finished, from its log."""
    counts: dict[str, int] = {}
    for rule in re.findall(r"Finished jobid: \d+ \(Rule: (\w+)\)", text):
        counts[rule] = counts.get(rule, 0) + 1
    return counts


def squeue_states(env: dict, name: str) -> dict[str, str]:
    """SLURM job id -> state of every job named `name`, finished ones included (within MinJobAge)."""
    out = subprocess.run(
        ["squeue", "--states=all", "--noheader", "--format=%i|%T", "--name", name],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    return dict(line.split("|", 1) for line in out.split())


def results_dir(workdir: Path, configfile: str) -> Path:
    config = yaml.safe_load((workdir / configfile).read_text()) or {}
    return workdir / config.get("results_dir", "results")


def strip_timing(value):
    """Drop dictionary keys that name timings, recursively."""
    if isinstance(value, dict):
        return {k: strip_timing(v) for k, v in value.items() if not TIMING.search(str(k))}
    if isinstance(value, list | tuple):
        return [strip_timing(v) for v in value]
    return value


def _read_table(text: str, delimiter: str) -> list[list[str]]:
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    if not rows:
        return rows
    keep = [i for i, name in enumerate(rows[0]) if not TIMING.search(name)]
    table = [[row[i] for i in keep if i < len(row)] for row in rows]
    return [table[0]] + [row for row in table[1:] if not any(TIMING.search(cell) for cell in row)]


def _load_torch(path: Path):
    import torch

    return torch.load(path, map_location="cpu", weights_only=False)


def equal_values(left, right) -> bool:
    """Equality of nested data; tensors compared element-wise, NaN equal to NaN."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(equal_values(left[k], right[k]) for k in left)
    if isinstance(left, list | tuple):
        return len(left) == len(right) and all(equal_values(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, float):
        return left == right or (math.isnan(left) and math.isnan(right))
    if type(left).__name__ in ("Tensor", "Parameter"):
        import torch

        return left.shape == right.shape and left.dtype == right.dtype and torch.equal(left, right)
    if type(left).__name__ == "ndarray":
        import numpy

        return left.dtype == right.dtype and numpy.array_equal(left, right, equal_nan=left.dtype.kind in "fc")
    return left == right


def load_comparable(path: Path):
    """The content of a result file as data, with timing fields dropped."""
    suffix = path.suffix
    if suffix == ".json":
        return strip_timing(json.loads(path.read_text()))
    if suffix == ".jsonl":
        return [strip_timing(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
    if suffix in (".csv", ".tsv"):
        return _read_table(path.read_text(), "," if suffix == ".csv" else "\t")
    if suffix == ".pt":
        return strip_timing(_load_torch(path))
    return path.read_bytes()


def compare_trees(left: Path, right: Path) -> list[str]:
    """Differences between two result trees (files under logs/ and benchmarks/ and timing fields
    ignored); an empty list when they are equal."""

    def files(root: Path) -> set[Path]:
        return {
            p.relative_to(root)
            for p in root.rglob("*")
            if p.is_file() and not SKIP_DIRS & set(p.relative_to(root).parts[:-1])
        }

    left_files, right_files = files(left), files(right)
    problems = [f"only in {left}: {p}" for p in sorted(left_files - right_files)]
    problems += [f"only in {right}: {p}" for p in sorted(right_files - left_files)]
    for relative in sorted(left_files & right_files):
        if not equal_values(load_comparable(left / relative), load_comparable(right / relative)):
            problems.append(f"content differs: {relative}")
    return problems
