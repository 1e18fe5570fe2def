"""`resispec aggregate`: raw records + exactness rows of one table's jobs -> one tidy CSV."""

from __future__ import annotations

import csv
import json
import logging
from pathlib import Path

from resispec.steps._common import add_settings, json_arg

HELP = "aggregate one table's decoding records and exactness rows into a tidy CSV with 95% intervals"
log = logging.getLogger(__name__)
KEYS = ["table", "row", "host", "target", "draft", "dataset", "temperature", "tree", "method"]
COLUMNS = KEYS + ["metric", "mean", "ci_low", "ci_high", "n"]
NODE_METRICS = ("kl", "tv", "acceptance", "alpha_star", "law_err")


def add_arguments(parser) -> None:
    parser.add_argument("--records", nargs="+", required=True, help="raw record JSONL files, one per job")
    parser.add_argument("--exactness", nargs="+", required=True, help="exactness CSVs, one per job")
    parser.add_argument("--table", required=True, help="output tidy CSV")
    parser.add_argument("--jobs", type=json_arg, required=True, help="the table's jobs (JSON list)")
    add_settings(parser)


def read_records(path: str) -> list[dict]:
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_nodes(path: str) -> list[dict]:
    with open(path, newline="") as handle:
        return [
            {k: float(row[k]) for k in NODE_METRICS if row.get(k) not in (None, "")}
            for row in csv.DictReader(handle)
        ]


def node_extremes(nodes: list[dict]) -> list[dict]:
    """Worst cases over nodes: the largest KL and the largest acceptance excess over alpha*."""
    if not nodes:
        return []
    excess = max(node["acceptance"] - node["alpha_star"] for node in nodes)
    worst_kl = max(node["kl"] for node in nodes)
    return [
        {"metric": name, "mean": value, "ci_low": value, "ci_high": value, "n": len(nodes)}
        for name, value in (("max_excess_over_alpha_star", excess), ("kl_max", worst_kl))
    ]


def job_rows(job: dict, records: list[dict], nodes: list[dict], settings: dict) -> list[dict]:
    from resispec.metrics import prompt_metrics, summarise

    resamples = settings.get("audit", {}).get("bootstrap", 1000)
    seed = settings.get("seed", 0)
    rows = summarise([prompt_metrics(r) for r in records], resamples=resamples, seed=seed)
    rows += summarise(nodes, resamples=resamples, seed=seed) + node_extremes(nodes)
    keys = {key: job.get(key, "") for key in KEYS}
    keys["row"] = job["row"]
    return [{**keys, **row} for row in rows]


def run(args) -> int:
    out = []
    for job, records, nodes in zip(args.jobs, args.records, args.exactness, strict=True):
        out += job_rows(job, read_records(records), read_nodes(nodes), args.settings)
    Path(args.table).parent.mkdir(parents=True, exist_ok=True)
    with open(args.table, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(out)
    log.info("wrote %d rows for %d jobs to %s", len(out), len(args.jobs), args.table)
    return 0
