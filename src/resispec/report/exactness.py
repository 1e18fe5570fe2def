"""Exactness statistics per method, from the per-node exactness rows (or the tables as a fallback).

One KL everywhere (`resispec.audit.bounds`): per node, KL(p || law) of the verifier's exact output law,
its certified lower end ``kl`` and upper end ``kl_upper`` when the history recursion pruned (equal when
the law is exact). Per method, the mean over the sampled nodes with a 95% interval from a bootstrap
clustered by prompt, for both ends. The reference is the full-vocabulary audit (scope "full"); the
lumped top-token audit (scope "lumped") is used, and labelled so, only where no full row exists.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from resispec.audit.statistics import cluster_bootstrap

STAT_COLUMNS = [
    "mean",
    "ci_low",
    "ci_high",
    "upper",
    "upper_high",
    "max",
    "n_inf",
    "n",
    "n_prompts",
    "n_truncated",
    "max_law_err",
]
SCOPE_LABELS = {"full": "full vocabulary", "lumped": "lumped top-token vocabulary"}


def exact_law(nodes: pd.DataFrame) -> np.ndarray:
    """Boolean mask of nodes whose law was computed exactly (``law_err`` 0 or not recorded)."""
    if "law_err" not in nodes.columns:
        return np.ones(len(nodes), dtype=bool)
    err = nodes["law_err"].to_numpy(dtype=float)
    return np.isnan(err) | (err == 0)


def reference_scope(nodes: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The node rows KL is reported on: the full-vocabulary rows if any, else the lumped ones."""
    if "scope" not in nodes.columns:
        return nodes, "lumped"
    full = nodes[nodes["scope"] == "full"]
    return (full, "full") if not full.empty else (nodes[nodes["scope"] != "full"], "lumped")


def _prompts(rows: pd.DataFrame) -> list[str]:
    if "prompt_id" not in rows.columns:
        return [str(i) for i in range(len(rows))]  # no prompt recorded: every node its own cluster
    return [
        f"{d}|{t}|{p}"
        for d, t, p in zip(
            rows.get("dataset", ""), rows.get("temperature", ""), rows["prompt_id"], strict=True
        )
    ]


def _method_stats(rows: pd.DataFrame, resamples: int, seed: int) -> dict:
    kl = rows["kl"].to_numpy(dtype=float)
    upper = rows["kl_upper"].to_numpy(dtype=float) if "kl_upper" in rows else kl
    prompts = _prompts(rows)
    mean, low, high = cluster_bootstrap(kl, prompts, resamples=resamples, seed=seed)
    up_mean, _, up_high = cluster_bootstrap(upper, prompts, resamples=resamples, seed=seed)
    finite = kl[np.isfinite(kl)]
    err = (
        np.nan_to_num(rows["law_err"].to_numpy(dtype=float), nan=0.0)
        if "law_err" in rows
        else np.zeros(len(rows))
    )
    return {
        "mean": mean,
        "ci_low": low,
        "ci_high": high,
        "upper": up_mean,
        "upper_high": up_high,
        "max": finite.max() if finite.size else np.nan,
        "n_inf": int(np.isinf(kl).sum()),
        "n": len(rows),
        "n_prompts": len(set(prompts)),
        "n_truncated": int((err > 0).sum()),
        "max_law_err": float(err.max()) if err.size else 0.0,
    }


def kl_by_method(
    tables: dict, nodes: pd.DataFrame | None, *, resamples: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Per method (index): ``STAT_COLUMNS`` and ``source``; from the per-node audit (reference scope), else
    from the ``kl`` rows of the audit table, Table 4 or any table (then only mean, CI and max are known)."""
    if nodes is not None and not nodes.empty:
        rows, scope = reference_scope(nodes)
        stats = {
            method: _method_stats(part, resamples, seed) for method, part in rows.groupby("method", sort=True)
        }
        frame = pd.DataFrame.from_dict(stats, orient="index")[STAT_COLUMNS]
        return frame.assign(source=f"per-node audit, {SCOPE_LABELS[scope]}")
    for name in ("audit", "table4", *sorted(tables)):
        frame = tables.get(name)
        if frame is not None and (frame["metric"] == "kl").any():
            rows = frame[frame["metric"] == "kl"].groupby("method")
            out = rows[["mean", "ci_low", "ci_high"]].mean().assign(max=rows["mean"].max(), n=rows.size())
            out = out.assign(
                upper=out["mean"],
                upper_high=out["ci_high"],
                n_inf=0,
                n_prompts=np.nan,
                n_truncated=0,
                max_law_err=np.nan,
            )
            return out[STAT_COLUMNS].assign(source=f"results/tables/{name}.csv")
    return pd.DataFrame(columns=[*STAT_COLUMNS, "source"])


def draws(method: str) -> str | None:
    """How a verifier draws its candidates ('with_replacement', ...), or None for an unknown method."""
    try:
        from resispec.verify import get_verifier

        return get_verifier(method.split("+")[-1]).draws
    except (ImportError, KeyError, ValueError, TypeError):
        return None


def monte_carlo_rows(nodes: pd.DataFrame | None) -> pd.DataFrame:
    """The full-vocabulary nodes that carry a Monte Carlo cross-check (``mc_draws`` > 0)."""
    if nodes is None or "mc_draws" not in nodes.columns:
        return pd.DataFrame()
    return nodes[pd.to_numeric(nodes["mc_draws"], errors="coerce").fillna(0) > 0]
