"""Comparison tables (paper | ours with 95% CI | ours/paper) as HTML and LaTeX (booktabs)."""

from __future__ import annotations

import html
import math
from pathlib import Path

import pandas as pd

from resispec.report.compare import COMPARABLE

LABELS = {
    "accepted_length": "Acc. length",
    "throughput": "Thru. (tok/s)",
    "accepted_length_gain": "Acc. gain vs {baseline}",
    "speedup": "Speedup vs {baseline}",
    "speedup_vs_autoregressive": "Speedup vs autoregressive",
    "kl": "KL(p || law)",
    "verification_cost": "Verification cost",
    "marginal_gain": "Marginal gain (ΔEAL)",
    "efficiency": "Efficiency η",
}
DATASET_LABELS = {"cnn_dailymail": "CNN/DM", "openwebtext": "OpenWebText", "c4": "C4"}
RATIO_METRICS = ("speedup", "accepted_length_gain", "speedup_vs_autoregressive")
NODE_METRICS = ("kl",)  #: cells whose n counts audited nodes; every other n counts prompts
HEADER = (
    "Dataset",
    "T",
    "Tree",
    "Method",
    "Quantity",
    "Paper",
    "Ours (95% CI)",
    "n",
    "Ours/Paper",
    "Verdict",
    "Note",
)


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def fmt_number(value: float, metric: str = "") -> str:
    """A number for tables: scientific below 1e-3 and from 1e5, else 3 significant digits; '×' for ratios."""
    if _missing(value):
        return "–"
    if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
        text = f"{value:.2e}"
    elif abs(value) >= 100:
        text = f"{value:.1f}"
    else:
        text = f"{value:.3g}"
    return text + ("×" if metric in RATIO_METRICS else "")


def fmt_paper(value: float, metric: str) -> str:
    """A paper number as printed (up to 6 significant digits); 'not printed' for ours-only rows."""
    if _missing(value):
        return "not printed"
    return f"{value:.6g}" + ("×" if metric in RATIO_METRICS else "")


def fmt_count(n, metric: str) -> str:
    """The sample size behind a cell: prompts, or audited nodes for node metrics."""
    if _missing(n):
        return "–"
    return f"{int(n)} {'nodes' if metric in NODE_METRICS else 'prompts'}"


def _key(paper_value, our_value, formatter=str) -> str:
    if not _missing(paper_value):
        return formatter(paper_value)
    if not _missing(our_value):
        return f"n/s ({formatter(our_value)})"
    return "n/s"


def display_rows(comparison: pd.DataFrame) -> list[dict]:
    """Rows of display strings (keys: HEADER) plus 'status' ('ok', 'missing'), in page order."""
    rows = []
    several_pairs = comparison.get("our_models", pd.Series(dtype=object)).dropna().nunique() > 1
    for cell in comparison.to_dict("records"):
        ok = not _missing(cell["ours"])
        interval = f"[{fmt_number(cell['ours_low'])}, {fmt_number(cell['ours_high'])}]"
        pair = f"ours: {cell.get('our_models')}"
        ours = f"{fmt_number(cell['ours'], cell['metric'])} {interval}"
        label = LABELS.get(cell["metric"], cell["metric"]).format(baseline=cell.get("baseline") or "")
        rows.append(
            {
                "Dataset": _key(cell["dataset"], cell.get("our_dataset"), lambda d: DATASET_LABELS.get(d, d)),
                "T": _key(cell["temperature"], cell.get("our_temperature"), lambda t: f"{float(t):g}"),
                "Tree": _key(cell["tree"], cell.get("our_tree")),
                "Method": cell["method"],
                "Quantity": label + (" (derived)" if cell.get("derived") else ""),
                "Paper": fmt_paper(cell["value"], cell["metric"]),
                "Ours (95% CI)": ours if ok else "not run",
                "n": fmt_count(cell["n"], cell["metric"]) if ok else "–",
                "Ours/Paper": fmt_number(cell["ratio"]) if ok else "–",
                "Verdict": cell.get("verdict") or "–",
                "Note": "; ".join(filter(None, [pair if several_pairs and ok else "", cell["note"]])),
                "status": "ok" if ok else "missing",
                "agrees": cell.get("agrees"),
                "comparable": cell["metric"] in COMPARABLE,
            }
        )
    return rows


def html_table(comparison: pd.DataFrame, *, table_id: str, caption: str) -> str:
    """An HTML <table> with one row per paper cell; rows not run get class 'missing'."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADER)
    body = []
    for row in display_rows(comparison):
        css = row["status"] + (" disagree" if row["agrees"] is False and row["comparable"] else "")
        css += " ours-only" if row["Paper"] == "not printed" else ""
        cells = "".join(f"<td>{html.escape(str(row[h]))}</td>" for h in HEADER)
        body.append(f'<tr class="{css}">{cells}</tr>')
    return (
        f'<table id="{html.escape(table_id)}" class="comparison"><caption>{html.escape(caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    )


LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "×": r"$\times$",
    "Δ": r"$\Delta$",
    "η": r"$\eta$",
    "–": "--",
    "|": r"$|$",
}


def latex_escape(text: str) -> str:
    """Escape LaTeX specials and map the few non-ASCII symbols the tables use."""
    return "".join(LATEX_SPECIALS.get(ch, ch) for ch in str(text))


def latex_table(comparison: pd.DataFrame, *, caption: str) -> str:
    """A booktabs longtable; notes go to a last column in small type."""
    columns = HEADER[:-1]
    spec = "lllllrlrrl" + r">{\raggedright\arraybackslash}p{4.2cm}"
    head = " & ".join(rf"\textbf{{{latex_escape(h)}}}" for h in HEADER) + r" \\"
    lines = [
        rf"\begin{{longtable}}{{{spec}}}",
        rf"\caption*{{{latex_escape(caption)}}} \\",
        r"\toprule",
        head,
        r"\midrule",
        r"\endfirsthead",
        r"\toprule",
        head,
        r"\midrule",
        r"\endhead",
        r"\bottomrule",
        r"\endfoot",
    ]
    for row in display_rows(comparison):
        values = [latex_escape(row[h]) for h in columns] + [rf"{{\scriptsize {latex_escape(row['Note'])}}}"]
        lines.append(" & ".join(values) + r" \\")
    lines.append(r"\end{longtable}")
    return "\n".join(lines) + "\n"


def table_title(name: str) -> str:
    """'table3' -> 'Table 3', 'figure1' -> 'Figure 1'."""
    for prefix in ("table", "figure"):
        if name.startswith(prefix):
            return f"{prefix.capitalize()} {name[len(prefix) :]}"
    return name


def table_texts(comparison: pd.DataFrame, info: dict[str, dict]) -> dict[str, dict[str, str]]:
    """Per paper table: its LaTeX (``tex``), HTML (``html``) and ``caption``."""
    texts = {}
    for table, part in comparison.groupby("table", sort=True):
        caption = f"{table_title(table)}: {info.get(table, {}).get('caption', '')}"
        texts[table] = {
            "tex": latex_table(part, caption=caption),
            "html": html_table(part, table_id=f"cmp-{table}", caption=caption),
            "caption": caption,
        }
    return texts


def write_tables(comparison: pd.DataFrame, info: dict[str, dict], out_dir) -> dict[str, dict[str, str]]:
    """Write ``{table}.tex`` and ``{table}.html`` per paper table under ``out_dir``; returns the texts."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    texts = table_texts(comparison, info)
    for table, text in texts.items():
        (out_dir / f"{table}.tex").write_text(text["tex"])
        (out_dir / f"{table}.html").write_text(text["html"])
    return texts
