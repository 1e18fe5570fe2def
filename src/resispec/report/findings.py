"""Findings written from the numbers: exactness (KL, acceptance vs alpha*), disagreements with the paper."""

from __future__ import annotations

import pandas as pd

from resispec.report.compare import COMPARABLE, FP_KL_LEVEL
from resispec.report.figures import kl_by_method
from resispec.report.tables import display_rows, fmt_number

ALPHA_TOLERANCE = 1e-9  #: acceptance above alpha* + this counts as an excess (exact per-node values)


def kl_findings(tables: dict, nodes: pd.DataFrame | None) -> list[str]:
    """One sentence per method: is its KL at floating-point level (judged on the max over nodes)?"""
    kl = kl_by_method(tables, nodes)
    if kl.empty:
        return ["No KL was measured in this run (no per-node audit, no kl rows in the tables)."]
    out = [f"Source: {kl['source'].iloc[0]}; floating-point level means below {FP_KL_LEVEL:g}."]
    for method, row in kl.iterrows():
        worst = row["max"] if pd.notna(row["max"]) else row["ci_high"]
        exact = worst < FP_KL_LEVEL and not row["n_inf"]
        level = "at floating-point level" if exact else "NOT at floating-point level"
        infinite = (
            f"KL is infinite on {row['n_inf']} of {row['n']} nodes (the output law gives zero mass to a "
            "token the target can emit); over the finite nodes "
            if row["n_inf"]
            else ""
        )
        out.append(
            f"{method}: {infinite}mean KL(p || law) = {fmt_number(row['mean'])} "
            f"[{fmt_number(row['ci_low'])}, {fmt_number(row['ci_high'])}], max {fmt_number(worst)}: {level}."
        )
    return out


def alpha_findings(nodes: pd.DataFrame | None, tolerance: float = ALPHA_TOLERANCE) -> list[str]:
    """Per method: how many nodes accept above alpha* (which proves the verifier inexact)."""
    if nodes is None or nodes.empty:
        return ["No per-node audit was recorded, so acceptance was not checked against alpha*."]
    out = []
    for method, rows in nodes.groupby("method"):
        excess = rows["acceptance"] - rows["alpha_star"]
        above = int((excess > tolerance).sum())
        if above:
            out.append(
                f"{method}: acceptance exceeds alpha* on {above} of {len(rows)} nodes "
                f"(max excess {excess.max():.3g}); no exact verifier can do that, so {method} is inexact."
            )
        else:
            gap = (rows["alpha_star"] - rows["acceptance"]).mean()
            out.append(f"{method}: acceptance never exceeds alpha* ({len(rows)} nodes; mean gap {gap:.3g}).")
    return out


def paper_findings(comparison: pd.DataFrame) -> list[str]:
    """Coverage, and every comparable cell whose paper value lies outside our 95% CI, stated plainly."""
    ran = comparison["ours"].notna()
    keys = ["table", "method", "metric", "order"]
    cells = comparison.drop_duplicates(keys)
    done = comparison[ran].drop_duplicates(keys)
    out = [
        f"We reproduced {len(done)} of the {len(cells)} paper cells ({int(ran.sum())} table rows: one per "
        f"model pair of ours); {len(cells) - len(done)} were not run (each says why in its table)."
    ]
    ratios = comparison[ran & comparison["metric"].isin(["speedup", "accepted_length_gain"])]
    if not ratios.empty:
        inside = int(ratios["agrees"].astype(bool).sum())
        out.append(
            f"Of {len(ratios)} speedup / accepted-length-gain cells, the paper's value lies inside our "
            f"95% CI in {inside}; median ours/paper ratio {ratios['ratio'].median():.2f}."
        )
    disagree = comparison[ran & (comparison["agrees"] == False)]  # noqa: E712 (object column with None)
    absolute = disagree[~disagree["metric"].isin(COMPARABLE)]
    if not absolute.empty:
        out.append(
            f"{len(absolute)} absolute accepted lengths lie outside our CIs; expected, as our models differ "
            "from the paper's. Ratios and KL levels are the comparable quantities."
        )
    for table, part in disagree[disagree["metric"].isin(COMPARABLE)].groupby("table", sort=True):
        cells = [
            f"{r['Method']} {r['Quantity']} ({r['Dataset']}, T={r['T']}, {r['Tree']}): "
            f"paper {r['Paper']}, ours {r['Ours (95% CI)']}"
            for r in display_rows(part)
        ]
        out.append(
            {"text": f"{table}: our numbers disagree with the paper on {len(cells)} cells:", "items": cells}
        )
    return out


def findings(comparison: pd.DataFrame, tables: dict, nodes: pd.DataFrame | None) -> dict:
    """All findings grouped by heading."""
    return {
        "Exactness: KL per method": kl_findings(tables, nodes),
        "Exactness: acceptance against alpha*": alpha_findings(nodes),
        "Agreement with the paper": paper_findings(comparison),
    }
