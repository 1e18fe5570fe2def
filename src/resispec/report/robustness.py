"""The robustness table: every (budget, order) variant of our reading of ResiSpec's Algorithm 1 on the
audited nodes (`resispec.audit.variants`, ``results/exactness_variants/{run}.csv``), so that a reader
sees whether the verdict "ResiSpec is not exact" depends on one reading."""

from __future__ import annotations

import html
import math
from pathlib import Path

import pandas as pd

from resispec.audit.variants import variant_summary
from resispec.report.tables import fmt_number, latex_escape

TITLE = "Robustness of the ResiSpec verdict to our reading of Algorithm 1"
NOTE = (
    "Each audited resispec node's exact output law recomputed under every (budget, order) variant: budget "
    "'local' (Z = q(x) - R(x), as printed) or 'global' (Z = sum (q - R)+); deficit filled in order of "
    "decreasing q (as printed), increasing q or token index. Lumped top-token vocabulary; KL: the means, "
    "over the nodes whose KL is bounded, of its certified lower and upper ends (a node's KL is unbounded "
    "when its law misses a token the target can emit, or its upper end is when the recursion pruned); "
    "'above alpha*': nodes whose certified acceptance exceeds alpha* (no exact verifier can); largest "
    "excess: acceptance upper end minus alpha*."
)
HEADER = (
    "variant",
    "nodes",
    "mean KL (certified interval)",
    "nodes with unbounded KL",
    "mean TV",
    "share of nodes above alpha*",
    "largest excess over alpha*",
)


def read_variants(paths) -> pd.DataFrame | None:
    """Variant rows from a CSV, a folder of CSVs or a list of either; None when there are none."""
    if paths is None:
        return None
    files = []
    for path in map(Path, [paths] if isinstance(paths, str | Path) else paths):
        files += sorted(path.glob("*.csv")) if path.is_dir() else [path] if path.is_file() else []
    frames = [pd.read_csv(path) for path in files]
    frames = [frame for frame in frames if not frame.empty]
    return pd.concat(frames, ignore_index=True) if frames else None


def robustness_rows(frame: pd.DataFrame | None) -> list[list[str]]:
    if frame is None or frame.empty:
        return []
    rows = []
    for row in variant_summary(frame.to_dict("records")):
        kl = f"[{fmt_number(row['kl'])}, {fmt_number(row['kl_upper'])}]"
        excess = row["max_excess"]
        rows.append(
            [
                row["variant"] + (" (as printed)" if row["printed"] else ""),
                str(row["nodes"]),
                kl,
                str(row["kl_inf_nodes"]),
                fmt_number(row["tv"]),
                f"{row['share_above_alpha_star']:.0%}",
                "–" if math.isnan(excess) else f"{excess:+.4f}",
            ]
        )
    return rows


def robustness_html(frame: pd.DataFrame | None) -> str:
    rows = robustness_rows(frame)
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADER)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (
        f'<h3 id="robustness">{html.escape(TITLE)}</h3><p class="note">{html.escape(NOTE)}</p>'
        f'<table id="robustness-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    )


def robustness_latex(frame: pd.DataFrame | None) -> str:
    rows = robustness_rows(frame)
    if not rows:
        return ""
    lines = [
        f"\\section*{{{latex_escape(TITLE)}}}",
        latex_escape(NOTE),
        "",
        "{\\small",
        "\\begin{longtable}{lllllll}",
        "\\toprule",
        " & ".join(latex_escape(h) for h in HEADER) + " \\\\",
        "\\midrule",
    ]
    lines += [" & ".join(latex_escape(c) for c in row) + " \\\\" for row in rows]
    return "\n".join(lines + ["\\bottomrule", "\\end{longtable}", "}", ""])
