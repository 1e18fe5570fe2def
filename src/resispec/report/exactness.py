"""Exactness statistics per method, from the per-node exactness rows (or the tables as a fallback).

A node's law is *exact* when its certified truncation error ``law_err`` is 0 (closed-form laws); a
truncated law (``law_err > 0``, top-q recursion) puts no mass outside the kept tokens, so its KL can be
inflated up to infinity by the truncation alone: KL statistics use exact-law nodes only, and truncated
nodes contribute through ``TV - law_err``, a lower bound on the true TV.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

STAT_COLUMNS = ["mean", "ci_low", "ci_high", "max", "n_inf", "n", "n_truncated", "max_law_err", "tv_excess"]


def exact_law(nodes: pd.DataFrame) -> np.ndarray:
    """Boolean mask of nodes whose law was computed exactly (``law_err`` 0 or not recorded)."""
    if "law_err" not in nodes.columns:
        return np.ones(len(nodes), dtype=bool)
    err = nodes["law_err"].to_numpy(dtype=float)
    return np.isnan(err) | (err == 0)


def _method_stats(rows: pd.DataFrame) -> dict:
    exact = rows[exact_law(rows)]
    kl = exact["kl"].to_numpy(dtype=float)
    finite = kl[np.isfinite(kl)]
    mean = finite.mean() if finite.size else np.nan
    half = 1.96 * finite.std(ddof=1) / np.sqrt(finite.size) if finite.size > 1 else 0.0
    err = rows["law_err"].to_numpy(dtype=float) if "law_err" in rows else np.zeros(len(rows))
    err = np.nan_to_num(err, nan=0.0)
    return {
        "mean": mean, "ci_low": mean - half, "ci_high": mean + half,
        "max": finite.max() if finite.size else np.nan, "n_inf": int(np.isinf(kl).sum()), "n": len(exact),
        "n_truncated": len(rows) - len(exact), "max_law_err": err.max() if err.size else 0.0,
        "tv_excess": float(np.max(rows["tv"].to_numpy(dtype=float) - err)) if len(rows) else np.nan,
    }  # fmt: skip


def kl_by_method(tables: dict, nodes: pd.DataFrame | None) -> pd.DataFrame:
    """Per method (index): ``STAT_COLUMNS`` and ``source``; from the per-node audit, else from the
    ``kl`` rows of the audit table, Table 4 or any table (then only mean, CI and max are known)."""
    if nodes is not None and not nodes.empty:
        stats = {method: _method_stats(rows) for method, rows in nodes.groupby("method", sort=True)}
        return pd.DataFrame.from_dict(stats, orient="index")[STAT_COLUMNS].assign(source="per-node audit")
    for name in ("audit", "table4", *sorted(tables)):
        frame = tables.get(name)
        if frame is not None and (frame["metric"] == "kl").any():
            rows = frame[frame["metric"] == "kl"].groupby("method")
            out = rows[["mean", "ci_low", "ci_high"]].mean().assign(max=rows["mean"].max(), n=rows.size())
            out = out.assign(n_inf=0, n_truncated=0, max_law_err=np.nan, tv_excess=np.nan)
            return out[STAT_COLUMNS].assign(source=f"results/tables/{name}.csv")
    return pd.DataFrame(columns=[*STAT_COLUMNS, "source"])


def draws(method: str) -> str | None:
    """How a verifier draws its candidates ('with_replacement', ...), or None for an unknown method."""
    try:
        from resispec.verify import get_verifier

        return get_verifier(method.split("+")[-1]).draws
    except (ImportError, KeyError, ValueError, TypeError):
        return None
