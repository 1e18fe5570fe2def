"""Rows of ours that the paper has no cell for, shown beside its cells: every method's speedup over
autoregressive decoding (the target alone, same prompts and sampling, timed in the same pass)."""

from __future__ import annotations

import numpy as np
import pandas as pd

AR_METRIC = "speedup_vs_autoregressive"  #: our throughput over the target alone (paired), in every table
AR_NOTE = "ours only: the paper prints no autoregressive baseline (paired bootstrap over the same prompts)"


def autoregressive_rows(table: str, ours: pd.DataFrame | None, first_order: int) -> list[dict]:
    """One row per (model pair, dataset, T, tree, method) of our table with its speedup over
    autoregressive decoding of the same prompts; ``value`` is NaN (the paper has none), no verdict."""
    if ours is None or ours.empty:
        return []
    rows = ours[(ours["metric"] == AR_METRIC) & ours["mean"].notna()]
    rows = rows.sort_values(["target", "draft", "dataset", "temperature", "tree", "method"])
    several = rows[["target", "draft"]].drop_duplicates().shape[0] > 1
    out = []
    for i, r in enumerate(rows.to_dict("records")):
        row = {
            "table": table,
            "target": r["target"],
            "draft": r["draft"],
            "dataset": r["dataset"],
            "temperature": r["temperature"],
            "tree": r["tree"],
            "method": r["method"],
            "metric": AR_METRIC,
            "value": np.nan,
            "baseline": "autoregressive",
            "derived": False,
            "order": first_order + i,
            "paper_tree": r["tree"],
            "ours": r["mean"],
            "ours_low": r["ci_low"],
            "ours_high": r["ci_high"],
            "n": r["n"],
            "ratio": np.nan,
            "our_dataset": r["dataset"],
            "our_temperature": r["temperature"],
            "our_tree": r["tree"],
            "our_models": f"{r['target']} / {r['draft']}" if several else None,
            "derived_ours": False,
            "paired": True,
            "agrees": None,
            "verdict": None,
            "ours_only": True,
            "note": AR_NOTE,
        }
        out.append(row)
    return out
