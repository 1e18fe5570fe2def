"""Findings written from the numbers: exactness (KL, acceptance vs alpha*), disagreements with the paper."""

from __future__ import annotations

import pandas as pd

from resispec.report.beside import paper_rows
from resispec.report.bounds import bound_findings
from resispec.report.compare import COMPARABLE, FP_KL_LEVEL
from resispec.report.exactness import draws, kl_by_method
from resispec.report.tables import display_rows, fmt_number

ALPHA_TOLERANCE = 1e-9  #: acceptance above alpha* + this counts as an excess (exact per-node values)


def _kl_sentence(method: str, row: pd.Series) -> str:
    worst = row["max"] if pd.notna(row["max"]) else row["ci_high"]
    if row["n"] == 0:
        head = f"{method}: no node had an exactly computed law, so its KL is not judged"
    else:
        exact = worst < FP_KL_LEVEL and not row["n_inf"]
        level = "at floating-point level" if exact else "NOT at floating-point level"
        inf = (
            f", KL = inf on {row['n_inf']} (the law gives zero mass to a token p can emit)"
            if row["n_inf"]
            else ""
        )
        head = (
            f"{method}: over {row['n']} nodes with an exact law, mean KL(p || law) = "
            f"{fmt_number(row['mean'])} [{fmt_number(row['ci_low'])}, {fmt_number(row['ci_high'])}], "
            f"max {fmt_number(worst)}{inf}: {level}"
        )
    if not row["n_truncated"]:
        return head + "."
    proof = "proves the law differs from p" if row["tv_excess"] > FP_KL_LEVEL else "proves nothing"
    return (
        f"{head}. {row['n_truncated']} nodes had a truncated law (certified error up to "
        f"{fmt_number(row['max_law_err'])}) and are left out of the KL; TV minus that error reaches "
        f"{fmt_number(row['tv_excess'])}, which {proof}."
    )


def kl_findings(tables: dict, nodes: pd.DataFrame | None) -> list[str]:
    """One sentence per method: is its KL at floating-point level, on the nodes whose law is exact?"""
    kl = kl_by_method(tables, nodes)
    if kl.empty:
        return ["No KL was measured in this run (no per-node audit, no kl rows in the tables)."]
    head = f"Source: {kl['source'].iloc[0]}; floating-point level means below {FP_KL_LEVEL:g}."
    return [head] + [_kl_sentence(method, row) for method, row in kl.iterrows()]


def alpha_findings(nodes: pd.DataFrame | None, tolerance: float = ALPHA_TOLERANCE) -> list[str]:
    """Per method: nodes accepting above alpha*, which proves an i.i.d.-candidate verifier inexact."""
    if nodes is None or nodes.empty:
        return ["No per-node audit was recorded, so acceptance was not checked against alpha*."]
    out = []
    for method, rows in nodes.groupby("method"):
        excess = rows["acceptance"] - rows["alpha_star"]
        above, how = int((excess > tolerance).sum()), draws(method)
        if how != "with_replacement":
            out.append(
                f"{method}: draws its candidates {(how or 'in an unknown way').replace('_', ' ')}, so alpha* "
                f"(the bound for k i.i.d. candidates) does not bound it; above it on {above} of "
                f"{len(rows)} nodes."
            )
        elif above:
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
    """All findings grouped by heading (agreement with the paper: paper cells only, not ours_only rows)."""
    from resispec.verify import EXACT_METHODS

    return {
        "Exactness: KL per method": kl_findings(tables, nodes),
        "Exactness: acceptance against alpha*": alpha_findings(nodes),
        "Exactness: distance to each method's bound": bound_findings(nodes, EXACT_METHODS),
        "Agreement with the paper": paper_findings(paper_rows(comparison)),
    }
