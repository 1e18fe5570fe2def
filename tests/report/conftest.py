"""Synthetic tidy results in the documented format (docs/architecture.md), for the report tests.

Mirrors the aggregator's output: the contract's columns plus ``row`` and ``host``; per-node exactness
files in ``exactness/{run}.csv``. Values are random (seeded) and mean nothing.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

TARGET, DRAFT, SMALL, EAGLE = "tiny-target", "tiny-draft", "tiny-draft-small", "tiny-eagle"
DATASETS = ("cnn_dailymail", "openwebtext", "c4")
ADD_ON = ("resispec", "ers")
AR = "autoregressive"


def _row(rng, key: dict, metric: str, mean: float, rel_sd: float = 0.05, n: int = 20) -> dict:
    half = 1.96 * abs(mean) * rel_sd * rng.uniform(0.5, 1.5) / np.sqrt(n)
    return {**key, "metric": metric, "mean": mean, "ci_low": mean - half, "ci_high": mean + half, "n": n}


def _key(table, dataset, temperature, tree, method, host="specinfer", draft=DRAFT) -> dict:
    return dict(
        table=table,
        row=f"{dataset}_{temperature}_{tree}",
        host=host,
        target=TARGET,
        draft=draft,
        dataset=dataset,
        temperature=temperature,
        tree=tree,
        method=method,
    )


def _ratio_rows(rng, key: dict, means: dict[str, dict[str, float]], method: str) -> list[dict]:
    """Paired ratio rows of ``method`` against every other method of its configuration (as the aggregator
    writes them: speedup_vs_{m} from throughputs, accepted_length_gain_vs_{m}, none against AR's length)."""
    rows = []
    for other, theirs in means.items():
        if other == method:
            continue
        rows.append(
            _row(rng, key, f"speedup_vs_{other}", means[method]["throughput"] / theirs["throughput"], 0.03)
        )
        if other != AR:
            gain = means[method]["accepted_length"] / theirs["accepted_length"]
            rows.append(_row(rng, key, f"accepted_length_gain_vs_{other}", gain, 0.03))
    return rows


def _decode_rows(rng, table, configs, methods, host="specinfer", draft=DRAFT) -> list[dict]:
    rows = []
    for dataset, temperature, tree in configs:
        means = {AR: {"accepted_length": 1.0, "throughput": 40.0}}
        for method in methods:
            length = rng.uniform(1.5, 2.5) * (1.3 if method in ADD_ON else 1.0)
            means[method] = {"accepted_length": length, "throughput": 20 * length}
        for method, values in means.items():
            key = _key(table, dataset, temperature, tree, method, host, draft)
            rows += [_row(rng, key, metric, value) for metric, value in values.items()]
            if method == AR:
                continue
            rows += _ratio_rows(rng, key, means, method)
            kl = 0.02 if method == "resispec" else 10 ** rng.uniform(-17, -15)
            rows += [
                _row(rng, key, "kl", kl),
                _row(rng, key, "kl_upper", kl * (2 if method == "resispec" else 1)),
            ]
            rows.append(_row(rng, key, "tv", np.sqrt(kl / 2)))
    return rows


def _tables(rng) -> list[dict]:
    grid = list(itertools.product(DATASETS, (1.0, 0.6), ("d5b3",)))
    rows = _decode_rows(rng, "table1", grid, ("specinfer", "resispec", "ers"))
    rows += _decode_rows(
        rng, "table2", [("cnn_dailymail", 1.0, "sequoia64x6")], ("sequoia", "resispec"), "sequoia"
    )
    trees = ("d7b2", "d5b3", "d4b5", "d3b11")
    rows += _decode_rows(rng, "table3", [("cnn_dailymail", 1.0, t) for t in trees], ("specinfer", "resispec"))
    rows += _decode_rows(rng, "table4", grid, ("specinfer", "resispec"))
    rows += _decode_rows(
        rng, "table5", [("cnn_dailymail", 1.0, f"k{n}d4") for n in (1, 2, 4, 8)], ("specinfer",)
    )
    table6 = list(itertools.product(DATASETS, (1.0,), ("d5b3", "d4b4")))
    for draft in (DRAFT, SMALL):
        rows += _decode_rows(rng, "table6", table6, ("specinfer", "resispec"), draft=draft)
    return rows


def _figure_rows(rng) -> list[dict]:
    rows = []
    for method, temperature in itertools.product(("specinfer", "resispec"), (0.6, 1.0)):
        first = rng.uniform(0.5, 0.7)
        key = _key("figure1", "cnn_dailymail", temperature, "d5b3", method)
        for i in range(1, 4):
            value = first * (0.25 ** (i - 1) if method == "specinfer" else 0.7 ** (i - 1))
            rows.append(_row(rng, key, f"position_acceptance_{i}", value))
    hosts = [("specinfer", "specinfer"), ("specinfer", "resispec"), ("sequoia", "sequoia")]
    hosts += [("sequoia", "resispec"), ("eagle", "sequoia"), ("eagle", "resispec")]
    for host, method in hosts:
        key = _key("figure3", "cnn_dailymail", 1.0, "d5b3", method, host, EAGLE if host == "eagle" else DRAFT)
        parts = [("time_draft_s", 0.02), ("time_target_s", 0.05), ("time_verify_s", 0.004)]
        if host != "eagle":  # eagle rows stand for records written before the five-way split
            parts += [("time_shaping_s", 0.003 if method == "resispec" else 0.0), ("time_commit_s", 0.002)]
        for metric, value in parts:
            rows.append(_row(rng, key, metric, value))
        if method == "resispec":
            for part, value in (("budgeting", 1e-3), ("redistribution", 2e-3), ("proxy", 5e-4)):
                rows.append(_row(rng, key, f"shaping_{part}_s", value))
    return rows


def make_nodes(rng, n_nodes: int = 40, n_full: int = 4, n_prompts: int = 10) -> pd.DataFrame:
    """Per-node audit rows of both scopes (lumped, then ``n_full`` full-vocabulary rows), ``n_prompts``
    prompts per configuration: exact verifiers stay below alpha*; 'resispec' exceeds it on some nodes,
    has infinite KL on two lumped nodes, pruned laws (certified intervals) on three, and Monte Carlo
    columns on its first full-vocabulary node."""
    rows = []
    for method, temperature in itertools.product(("specinfer", "ers", "resispec"), (0.6, 1.0)):
        size = n_nodes + n_full
        alpha = rng.uniform(0.4, 0.95, size)
        gap = {"specinfer": 0.15, "ers": 0.03, "resispec": -0.01}[method]
        acceptance = np.clip(alpha - gap * rng.uniform(0.0, 2.0, size), 0, 1)
        kl = 10 ** rng.uniform(-17, -14, size) if method != "resispec" else rng.uniform(1e-3, 5e-2, size)
        upper, law_err = kl.copy(), np.zeros(size)
        if method == "resispec":
            kl[:2] = upper[:2] = np.inf  # a law that misses a token the target can emit
            law_err[2:5], upper[2:5] = 1e-3, kl[2:5] * 3  # pruned laws: certified intervals
        key = dict(method=method, dataset="cnn_dailymail", temperature=temperature, tree="d5b3")
        for i in range(size):
            tv = min(np.sqrt(kl[i] / 2), 1.0)
            rows.append(
                {
                    **key,
                    "node": i,
                    "scope": "full" if i >= n_nodes else "lumped",
                    "prompt_id": f"p{i % n_prompts}",
                    "acceptance": acceptance[i],
                    "alpha_star": alpha[i],
                    "kl": kl[i],
                    "kl_upper": upper[i],
                    "tv": tv,
                    "tv_upper": tv + law_err[i],
                    "law_err": law_err[i],
                }
            )
        if method == "resispec":
            first = rows[-n_full]
            a, t = first["acceptance"], first["tv"]
            first.update(
                mc_draws=100000,
                mc_acceptance=a,
                mc_acceptance_low=a - 0.003,
                mc_acceptance_high=a + 0.003,
                mc_tv=t,
                mc_tv_low=t - 0.003,
                mc_tv_high=t + 0.003,
                mc_consistent=True,
            )
    return pd.DataFrame(rows)


def write_synthetic_results(root: Path, seed: int = 7, skip: tuple[str, ...] = ()) -> dict[str, Path]:
    """Write ``root``/tables/{table}.csv and ``root``/exactness/{run}.csv; tables in ``skip`` are left out."""
    rng = np.random.default_rng(seed)
    tables_dir, nodes_dir = root / "tables", root / "exactness"
    tables_dir.mkdir(parents=True, exist_ok=True)
    nodes_dir.mkdir(parents=True, exist_ok=True)
    for (method, temperature), part in make_nodes(rng).groupby(["method", "temperature"]):
        part.to_csv(nodes_dir / f"cnn_t{temperature:g}_{method}.csv", index=False)
    frame = pd.DataFrame(_tables(rng) + _figure_rows(rng))
    for table, part in frame.groupby("table"):
        if table not in skip:
            part.to_csv(tables_dir / f"{table}.csv", index=False)
    return {"tables": tables_dir, "nodes": nodes_dir}


@pytest.fixture(scope="module")
def synthetic_results(tmp_path_factory) -> dict[str, Path]:
    """Paths of a synthetic results tree (read-only for tests): every table, Table 2 without the EAGLE host,
    and the per-node exactness files."""
    return write_synthetic_results(tmp_path_factory.mktemp("synthetic") / "results")


@pytest.fixture(scope="module")
def synthetic_config() -> dict:
    """A run configuration as the report receives it, with one stated reason for cells not run."""
    return {
        "run_name": "synthetic",
        "device": "cpu",
        "report": {"reasons": {"table2/eagle": "no EAGLE head in this synthetic run"}},
    }


@pytest.fixture(scope="module")
def built_report(synthetic_results, synthetic_config, tmp_path_factory) -> dict:
    """The report built (without PDF) from the synthetic results: ``{"out": folder, "result": paths}``."""
    from resispec.report import ReportSources, build_report

    out = tmp_path_factory.mktemp("report")
    tables, nodes = synthetic_results["tables"], synthetic_results["nodes"]
    result = build_report(
        tables,
        out / "figures",
        out / "reports",
        config=synthetic_config,
        sources=ReportSources(audit=nodes),
        pdf=False,
    )
    return {"out": out, "result": result}
