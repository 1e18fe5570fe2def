"""The report at a glance (shown above the tables): verdict counts against the paper and our speedups
over autoregressive decoding, per method over every configuration we ran."""

from __future__ import annotations

import html

import pandas as pd

from resispec.report.compare import AR_METRIC
from resispec.report.findings import verdict_counts
from resispec.report.tables import fmt_number, latex_escape

CONFIG_KEYS = ["target", "draft", "dataset", "temperature", "tree", "method"]
SPEED_HEADER = ("Method", "Configurations", "Median speedup vs autoregressive", "Range", "Faster / slower")


def speed_rows(comparison: pd.DataFrame) -> list[tuple[str, ...]]:
    """Per method: how many distinct configurations, median and range of the speedup over autoregressive
    decoding, and how many are faster / slower with 95% confidence."""
    rows = comparison[(comparison["metric"] == AR_METRIC) & comparison["ours"].notna()]
    rows = rows.drop_duplicates([k for k in CONFIG_KEYS if k in rows.columns])
    out = []
    for method, part in rows.groupby("method", sort=True):
        faster, slower = int((part["ours_low"] > 1).sum()), int((part["ours_high"] < 1).sum())
        out.append(
            (
                str(method),
                str(len(part)),
                fmt_number(part["ours"].median(), AR_METRIC),
                f"{fmt_number(part['ours'].min(), AR_METRIC)} – {fmt_number(part['ours'].max(), AR_METRIC)}",
                f"{faster} / {slower}",
            )
        )
    return out


def verdict_lines(comparison: pd.DataFrame) -> list[str]:
    paper = comparison[comparison["value"].notna()]
    cells = paper.drop_duplicates(["table", "method", "metric", "order"])
    computed = int(cells["ours"].notna().sum())
    comparable, absolute = verdict_counts(comparison), verdict_counts(comparison, comparable=False)
    return [
        f"Paper cells computed: {computed} of {len(cells)}.",
        "Comparable cells (ratios, KL levels, costs, Table 5 gains): "
        + ", ".join(f"{n} {k}" for k, n in comparable.items())
        + ".",
        "Absolute accepted lengths (other models than the paper's): "
        + ", ".join(f"{n} {k}" for k, n in absolute.items())
        + ".",
    ]


def glance_html(comparison: pd.DataFrame) -> str:
    """HTML of the at-a-glance block."""
    items = "".join(f"<li>{html.escape(line)}</li>" for line in verdict_lines(comparison))
    rows = speed_rows(comparison)
    if not rows:
        table = '<p class="note">No run recorded the autoregressive baseline.</p>'
    else:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in SPEED_HEADER)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
        caption = "Our throughput over autoregressive decoding of the same prompts (paired, 95% intervals)"
        table = (
            f'<table id="glance-speedups"><caption>{caption}</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table>"
        )
    return f'<ul class="glance" id="glance-verdicts">{items}</ul>{table}'


def glance_latex(comparison: pd.DataFrame) -> str:
    """LaTeX of the at-a-glance block (for report.pdf)."""
    lines = ["\\section*{At a glance}", "\\begin{itemize}"]
    lines += [f"\\item {latex_escape(line)}" for line in verdict_lines(comparison)]
    lines.append("\\end{itemize}")
    rows = speed_rows(comparison)
    if rows:
        header = " & ".join(latex_escape(h) for h in SPEED_HEADER) + r" \\"
        lines += ["\\begin{tabular}{lrlll}", "\\toprule", header, "\\midrule"]
        lines += [" & ".join(latex_escape(c) for c in row) + r" \\" for row in rows]
        lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"
