"""Experiment sheets: one TSV per paper table/figure, one row per decoding configuration."""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from resispec.decoding.arguments import tree_spec
from resispec.verify.registry import BASELINE, method_pattern, names
from resispec.workflow.config import ConfigError, schema_path, validator_with_defaults
from resispec.workflow.plugins import load_plugins

NUMERIC_COLUMNS = {"temperature": float, "num_prompts": int}
# Table ids a sheet may fill: report.tidy.TABLES less `audit` (made from every run, not from a sheet); kept
# here so that reading sheets (every Snakemake start) does not import the report stage (pandas).
SHEET_TABLES = ("table1", "table2", "table3", "table4", "table5", "table6", "figure1", "figure3")


class SheetError(ConfigError):
    """A sheet row is invalid; the message names the file, the row and the column."""


@dataclass(frozen=True)
class Job:
    """One decoding job of a table: a sheet row run with one verifier.

    Identical configurations in different sheets share one decoding run (`key`), so a table that
    reuses another table's settings costs nothing extra.
    """

    table: str
    row: dict[str, Any]
    method: str
    num_prompts: int

    @property
    def run(self) -> str:
        row = self.row
        return "_".join(
            [row["dataset"], f"T{row['temperature']:g}", row["tree"], row["target"], row["draft"]]
            + [f"n{self.num_prompts}"]
        )

    @property
    def baseline(self) -> str:
        """The autoregressive baseline this job's run is paired with: it depends on the target, the
        dataset, the temperature and the prompts, not on the tree or the draft (`group_baselines`)."""
        row = self.row
        return "_".join([row["dataset"], f"T{row['temperature']:g}", row["target"], f"n{self.num_prompts}"])

    @property
    def key(self) -> str:
        return f"{self.run}/{self.method}"

    def describe(self) -> dict[str, Any]:
        """Everything a decoding job needs to know about itself (JSON-serialisable)."""
        return {**self.row, "table": self.table, "method": self.method, "num_prompts": self.num_prompts}


RUN_KEYS = ("target", "draft", "dataset", "temperature", "tree")
BASELINE_KEYS = ("target", "dataset", "temperature")


def group_runs(jobs: list[Job]) -> dict[str, dict[str, Any]]:
    """Decoding runs by id: the configuration shared by jobs and every method any table asks of it, but
    the autoregressive baseline, which `group_baselines` decodes once for every run that shares it (each
    run names its ``baseline``)."""
    runs: dict[str, dict[str, Any]] = {}
    for job in jobs:
        run = runs.setdefault(
            job.run,
            {
                "run": job.run,
                **{k: job.row[k] for k in RUN_KEYS},
                "num_prompts": job.num_prompts,
                "baseline": job.baseline,
                "methods": [],
            },
        )
        if job.method not in run["methods"] and job.method != BASELINE:
            run["methods"].append(job.method)
    return runs


def group_baselines(jobs: list[Job]) -> dict[str, dict[str, Any]]:
    """Autoregressive baselines by id (`Job.baseline`): one timing pass of the target alone per (target,
    dataset, temperature, prompts) that some table asks for, shared by every run of those settings."""
    return {
        job.baseline: {
            "run": job.baseline,
            **{k: job.row[k] for k in BASELINE_KEYS},
            "num_prompts": job.num_prompts,
            "methods": [BASELINE],
        }
        for job in jobs
        if job.method == BASELINE
    }


def _sheet_schema() -> dict[str, Any]:
    """The sheet schema, its ``methods`` pattern the registered methods' (built-ins and plugins)."""
    schema = yaml.safe_load((schema_path().parent / "sheet.schema.yaml").read_text())
    schema["properties"]["methods"]["pattern"] = method_pattern()
    return schema


def _coerce(value: str, column: str, where: str) -> Any:
    if column not in NUMERIC_COLUMNS or value == "":
        return None if value == "" else value
    try:
        return NUMERIC_COLUMNS[column](value)
    except ValueError as exc:
        raise SheetError(f"{where} column '{column}': {value!r} is not a {column} number") from exc


def _check_row(row: dict[str, Any], where: str, validator, config: dict[str, Any]) -> dict[str, Any]:
    row = {k: v for k, v in row.items() if v is not None}
    for error in validator.iter_errors(row):
        column = ".".join(str(p) for p in error.absolute_path) or "?"
        if error.validator == "required":
            column = error.message.split("'")[1]
        elif error.validator == "additionalProperties":
            column = error.message.split("'")[1]
        raise SheetError(f"{where} column '{column}': {error.message}")
    for column in ("target", "draft"):
        if row[column] not in config.get("models", {}):
            message = f"model {row[column]!r} is not defined under `models`"
            raise SheetError(f"{where} column '{column}': {message}")
    if row["dataset"] not in config["data"]["datasets"]:
        raise SheetError(f"{where} column 'dataset': {row['dataset']!r} is not in data.datasets")
    limit = config["data"]["num_prompts"]
    if (row.get("num_prompts") or 0) > limit:
        raise SheetError(
            f"{where} column 'num_prompts': {row['num_prompts']} exceeds data.num_prompts ({limit}); the "
            "prompts files hold data.num_prompts prompts, and the documents after them train the drafts"
        )
    try:  # the parser `generate` uses: the same specs pass, with the same message when one does not
        tree_spec(row["tree"])
    except ValueError as exc:
        raise SheetError(f"{where} column 'tree': {exc}") from exc
    return row


def load_sheet(path: str | Path, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Read and validate a sheet; defaults come from the sheet schema."""
    path = Path(path)
    if not path.is_file():
        raise SheetError(f"experiment sheet not found: {path}")
    schema = _sheet_schema()
    validator = validator_with_defaults(jsonschema.Draft202012Validator)(schema)
    rows, seen = [], set()
    with path.open(newline="") as handle:
        reader = csv.DictReader((line for line in handle if not line.startswith("#")), delimiter="\t")
        for number, raw in enumerate(reader, start=1):
            where = f"{path}: row {number} ({(raw.get('row') or '').strip()})"
            if None in raw:
                raise SheetError(f"{where}: more cells than the header has columns")
            row = {k.strip(): _coerce((v or "").strip(), k.strip(), where) for k, v in raw.items()}
            row = _check_row(row, where, validator, config)
            if row["row"] in seen:
                raise SheetError(f"{where} column 'row': duplicate row id {row['row']!r}")
            seen.add(row["row"])
            rows.append(row)
    if not rows:
        raise SheetError(f"experiment sheet {path} has no rows")
    return rows


def row_methods(row: dict[str, Any]) -> list[str]:
    methods = row["methods"].split(",")
    # every run: the methods marked ``every_run`` (ers, optimal) and the target alone (the baseline)
    always = (*names(every_run=True), BASELINE)
    return methods + [m for m in always if m not in methods]


def available_prompts(config: dict[str, Any]) -> dict[str, int]:
    """With ``data.allow_fewer_prompts``, the documents (at most ``data.num_prompts``) that each local
    corpus holds, so that a run's name and tables say the prompts it really has; else {}."""
    from resispec.corpora import DATA_DIR_ENV, load_corpus

    data = config["data"]
    directory = data.get("dir") or os.environ.get(DATA_DIR_ENV)
    if not data.get("allow_fewer_prompts") or not directory:
        return {}
    return {
        name: len(load_corpus(name, data["num_prompts"], data_dir=directory, source="local"))
        for name in data["datasets"]
    }


def expand_jobs(config: dict[str, Any], base_dir: str | Path = ".") -> list[Job]:
    """All decoding jobs of all sheets named in config['experiments'] (the config's plugins first)."""
    load_plugins(config)
    jobs, available = [], available_prompts(config)
    for table, sheet in config.get("experiments", {}).items():
        if table not in SHEET_TABLES:
            known = ", ".join(SHEET_TABLES)
            raise SheetError(f"config key 'experiments.{table}': unknown table id {table!r} (known: {known})")
        for row in load_sheet(Path(base_dir) / sheet, config):
            num_prompts = row.get("num_prompts") or config["data"]["num_prompts"]
            num_prompts = min(num_prompts, available.get(row["dataset"], num_prompts))
            jobs.extend(Job(table, row, method, num_prompts) for method in row_methods(row))
    return jobs
