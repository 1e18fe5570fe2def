"""Tidy tables: the raw records and exactness rows of one table's jobs -> one row per (job, metric)
with its mean, 95% interval and count (`results/tables/{table}.csv`).

- Record metrics (accepted length, throughput, times) come from the timing pass only, with a bootstrap
  over prompts; ``n`` is the number of prompts. Times are seconds per step, Figure 3's five disjoint
  parts (`statistics.TIME_PARTS`); a record without a part (written before the split) has no value for
  it, so ``n`` counts only the prompts that recorded it.
- The autoregressive baseline's records come from the baseline the run shares with every run of its
  target, dataset, temperature and prompts (a job's ``baseline``), and join the run's records.
- Ratios to every other method of the same run, ``speedup_vs_{m}`` (throughput) and
  ``accepted_length_gain_vs_{m}``, are paired: ratio of sums over the prompts both decoded, bootstrap
  resampling the same prompts for both (`statistics.paired_ratio`); ``n`` is the number of prompts.
- Node metrics come from the exactness rows, with a bootstrap clustered by prompt; ``n`` counts nodes.
  ``kl``/``tv`` (and their certified ``*_upper`` ends) are the full-vocabulary audit, the one KL the
  report uses (`resispec.audit.bounds`); ``*_lumped`` are the top-token audit, labelled so.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

KEYS = ["table", "row", "host", "target", "draft", "dataset", "temperature", "tree", "method"]
COLUMNS = KEYS + ["metric", "mean", "ci_low", "ci_high", "n"]
NODE_METRICS = ("kl", "kl_upper", "tv", "tv_upper", "acceptance", "alpha_star", "bound", "law_err")
SCOPE_SUFFIX = {"full": "", "lumped": "_lumped"}  # node metrics of each audit scope in the tidy tables
AUTOREGRESSIVE = "autoregressive"
RATIOS = {"speedup": "throughput", "accepted_length_gain": "accepted_length"}  # ratio -> per-prompt metric


def read_records(path: str) -> list[dict]:
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_nodes(path: str) -> list[dict]:
    with open(path, newline="") as handle:
        return [
            {
                "method": row["method"],
                "scope": row.get("scope") or "lumped",
                "prompt_id": row.get("prompt_id") or "",
                **{k: float(row[k]) for k in NODE_METRICS if row.get(k) not in (None, "")},
            }
            for row in csv.DictReader(handle)
        ]


def _fixed(metric: str, value: float, n: int) -> dict:
    return {"metric": metric, "mean": value, "ci_low": value, "ci_high": value, "n": n}


def node_extremes(nodes: list[dict]) -> list[dict]:
    """Worst cases over exact-law nodes (either scope): the largest KL and acceptance excess over alpha*
    and over the method's own bound (when recorded)."""
    exact = [node for node in nodes if node.get("law_err", 0.0) == 0.0]
    if not exact:
        return []
    excess = max(node["acceptance"] - node["alpha_star"] for node in exact)
    worst_kl = max(node["kl"] for node in exact)
    rows = [_fixed("max_excess_over_alpha_star", excess, len(exact)), _fixed("kl_max", worst_kl, len(exact))]
    if all("bound" in node for node in exact):  # each method against the bound of its own candidate law
        worst = max(node["acceptance"] - node["bound"] for node in exact)
        rows.append(_fixed("max_excess_over_bound", worst, len(exact)))
    return rows


def node_rows(nodes: list[dict], *, resamples: int, seed: int) -> list[dict]:
    """Per scope: mean node metrics with a bootstrap over prompts, and the count of truncated laws."""
    from resispec.audit.statistics import cluster_bootstrap

    rows = []
    for scope, suffix in SCOPE_SUFFIX.items():
        mine = [node for node in nodes if node["scope"] == scope]
        if not mine:
            continue
        prompts = [node["prompt_id"] for node in mine]
        for metric in NODE_METRICS[:-1]:
            values = [node.get(metric, float("nan")) for node in mine]
            mean, low, high = cluster_bootstrap(values, prompts, resamples=resamples, seed=seed)
            rows.append(
                {"metric": metric + suffix, "mean": mean, "ci_low": low, "ci_high": high, "n": len(mine)}
            )
        truncated = float(sum(n.get("law_err", 0) > 0 for n in mine))
        infinite = float(sum(n.get("kl", 0.0) == float("inf") for n in mine))  # the law misses a token of p
        rows += [
            _fixed("truncated_nodes" + suffix, truncated, len(mine)),
            _fixed("kl_inf_nodes" + suffix, infinite, len(mine)),
        ]
    return rows + node_extremes(nodes)


def ratio_rows(job: dict, run_records: list[dict], *, resamples: int, seed: int) -> list[dict]:
    """Paired ratios of this job's method to every other method decoded in the same run's timing pass."""
    from resispec.audit.statistics import paired_ratio, prompt_metrics

    if job["method"] == AUTOREGRESSIVE:
        return []
    per_method: dict[str, dict[str, dict]] = {}
    for record in run_records:
        per_method.setdefault(record["method"], {})[record["prompt_id"]] = prompt_metrics(record)
    mine, rows = per_method.get(job["method"], {}), []
    for other, theirs in sorted(per_method.items()):
        for ratio, metric in RATIOS.items():
            if other == job["method"] or (other == AUTOREGRESSIVE and ratio == "accepted_length_gain"):
                continue
            num = {pid: values[metric] for pid, values in mine.items()}
            den = {pid: values[metric] for pid, values in theirs.items()}
            mean, low, high = paired_ratio(num, den, resamples=resamples, seed=seed)
            rows.append(
                {
                    "metric": f"{ratio}_vs_{other}",
                    "mean": mean,
                    "ci_low": low,
                    "ci_high": high,
                    "n": len(set(num) & set(den)),
                }
            )
    return rows


def job_rows(
    job: dict, records: list[dict], nodes: list[dict], settings: dict, *, run_records=None
) -> list[dict]:
    """Tidy rows of one job: its timing-pass records, paired ratios to the other methods of
    ``run_records`` (the run's timing records), its audited nodes."""
    from resispec.audit.statistics import prompt_metrics, summarise

    resamples = settings.get("audit", {}).get("bootstrap", 1000)
    seed = settings.get("seed", 0)
    rows = summarise([prompt_metrics(r) for r in records], resamples=resamples, seed=seed)
    rows += ratio_rows(job, run_records or [], resamples=resamples, seed=seed)
    rows += node_rows(nodes, resamples=resamples, seed=seed)
    keys = {key: job.get(key, "") for key in KEYS}
    keys["row"] = job["row"]
    return [{**keys, **row} for row in rows]


def run_of(path: str) -> str:
    """The run id of a per-run file (its name without suffixes)."""
    name = Path(path).name
    for suffix in (".jsonl", ".csv"):
        name = name.removesuffix(suffix)
    return name


def _by_run(files, reader) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for path in files or []:
        out.setdefault(run_of(path), []).extend(reader(path))
    return out


def table_rows(jobs: list[dict], record_files, node_files, settings: dict, baseline_files=()) -> list[dict]:
    """Tidy rows of every job of a table, from the timing records and exactness CSVs of its runs, and the
    records of the autoregressive baselines they share (a job's ``baseline``: its records join the run's,
    paired by prompt like any method of the run)."""
    records, nodes = _by_run(record_files, read_records), _by_run(node_files, read_nodes)
    baselines = _by_run(baseline_files, read_records)
    out = []
    for job in jobs:
        run = records.get(job["run"], [])
        if job.get("baseline") is not None:
            if job["baseline"] not in baselines:
                raise ValueError(f"aggregate: no baseline records {job['baseline']!r} for run {job['run']!r}")
            run = [r for r in run if r["method"] != AUTOREGRESSIVE] + baselines[job["baseline"]]
        mine = [r for r in run if r["method"] == job["method"]]
        audited = [n for n in nodes.get(job["run"], []) if n["method"] == job["method"]]
        if not mine:
            raise ValueError(f"aggregate: no records for run {job['run']!r} method {job['method']!r}")
        out += job_rows(job, mine, audited, settings, run_records=run)
    return out


def write_table(path: str | Path, rows: list[dict]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
