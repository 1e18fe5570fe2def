"""Tidy tables: the raw records and exactness rows of one table's jobs -> one row per (job, metric)
with its mean, bootstrap 95% interval and count (`results/tables/{table}.csv`)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

KEYS = ["table", "row", "host", "target", "draft", "dataset", "temperature", "tree", "method"]
COLUMNS = KEYS + ["metric", "mean", "ci_low", "ci_high", "n"]
NODE_METRICS = ("kl", "tv", "kl_lower", "tv_lower", "acceptance", "alpha_star", "bound", "law_err")


def read_records(path: str) -> list[dict]:
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_nodes(path: str) -> list[dict]:
    with open(path, newline="") as handle:
        return [
            {
                "method": row["method"],
                **{k: float(row[k]) for k in NODE_METRICS if row.get(k) not in (None, "")},
            }
            for row in csv.DictReader(handle)
        ]


def _without(node: dict, keys: tuple[str, ...]) -> dict:
    return {k: v for k, v in node.items() if k not in keys}


def _kl_tv(nodes: list[dict]) -> list[dict]:
    """Per node KL and TV: exact where every audited law of the job is exact; where some laws were
    truncated (history-dependent verifiers), the certified lower bounds instead, so `kl` is then a
    lower bound of the mean KL (flagged by `truncated_nodes` > 0)."""
    exact = all(n.get("law_err", 0.0) == 0.0 for n in nodes)
    keys = ("kl", "tv") if exact else ("kl_lower", "tv_lower")
    return [{"kl": n[keys[0]], "tv": n[keys[1]]} for n in nodes]


def _truncated(nodes: list[dict]) -> list[dict]:
    """How many audited nodes had a truncated (certified-bound) law instead of an exact one."""
    if not nodes:
        return []
    count = float(sum(n.get("law_err", 0.0) > 0 for n in nodes))
    return [{"metric": "truncated_nodes", "mean": count, "ci_low": count, "ci_high": count, "n": len(nodes)}]


def node_extremes(nodes: list[dict]) -> list[dict]:
    """Worst cases over nodes: the largest KL and the largest acceptance excess over alpha* and over
    the method's own bound (when recorded)."""
    if not nodes:
        return []
    excess = max(node["acceptance"] - node["alpha_star"] for node in nodes)  # exact-law nodes only
    worst_kl = max(node["kl"] for node in nodes)
    extremes = [("max_excess_over_alpha_star", excess), ("kl_max", worst_kl)]
    if all("bound" in node for node in nodes):  # each method against the bound of its own candidate law
        extremes.append(("max_excess_over_bound", max(node["acceptance"] - node["bound"] for node in nodes)))
    return [
        {"metric": name, "mean": value, "ci_low": value, "ci_high": value, "n": len(nodes)}
        for name, value in extremes
    ]


def job_rows(job: dict, records: list[dict], nodes: list[dict], settings: dict) -> list[dict]:
    from resispec.audit.statistics import prompt_metrics, summarise

    resamples = settings.get("audit", {}).get("bootstrap", 1000)
    seed = settings.get("seed", 0)
    rows = summarise([prompt_metrics(r) for r in records], resamples=resamples, seed=seed)
    nodes = [{k: v for k, v in node.items() if k != "method"} for node in nodes]
    rows += summarise([_without(n, ("kl", "tv")) for n in nodes], resamples=resamples, seed=seed)
    rows += summarise(_kl_tv(nodes), resamples=resamples, seed=seed)
    exact = [n for n in nodes if n.get("law_err", 0.0) == 0.0]
    rows += node_extremes(exact) + _truncated(nodes)
    keys = {key: job.get(key, "") for key in KEYS}
    keys["row"] = job["row"]
    return [{**keys, **row} for row in rows]


def run_of(path: str) -> str:
    """The run id of a per-run file (its name without suffixes)."""
    name = Path(path).name
    for suffix in (".jsonl", ".csv"):
        name = name.removesuffix(suffix)
    return name


def table_rows(jobs: list[dict], record_files, node_files, settings: dict) -> list[dict]:
    """Tidy rows of every job of a table, from the record JSONL and exactness CSV files of its runs."""
    records, nodes = {}, {}
    for record_file, node_file in zip(record_files, node_files, strict=True):
        for record in read_records(record_file):
            records.setdefault(run_of(record_file), []).append(record)
        nodes.setdefault(run_of(node_file), []).extend(read_nodes(node_file))
    out = []
    for job in jobs:
        mine = [r for r in records.get(job["run"], []) if r["method"] == job["method"]]
        audited = [n for n in nodes.get(job["run"], []) if n["method"] == job["method"]]
        if not mine:
            raise ValueError(f"aggregate: no records for run {job['run']} method {job['method']}")
        out += job_rows(job, mine, audited, settings)
    return out


def write_table(path: str | Path, rows: list[dict]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
