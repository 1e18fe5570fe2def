"""The report section "The paper's numbers against the exact limit" (HTML and LaTeX) from the frame of
``resispec.report.paper_limits`` (``results/tables/paper_limits.csv``)."""

from __future__ import annotations

import html

import pandas as pd

from resispec.report.paper_limits import ABOVE, FREE
from resispec.report.tables import latex_escape

TITLE = "The paper's numbers against the exact limit"
ASSUMPTIONS = (
    "Table 5 (N = 1, a single chain of candidates) used Table 1's model pair (Llama-2-7B with JF68M) on "
    "CNN/DM; the page names the target and the dataset but not the draft.",
    "Table 5's EAL and Table 1's accepted length both count the bonus token (the token the target emits "
    "after the accepted drafts). Were 1.89 accepted drafts without it, the chain's length would be 2.89 "
    "and the bound would be the tree's full depth (5 on d5b3): no constraint at all.",
    "The chain and the tree meet per-level acceptances of the same law: an exact method's text follows the "
    "target's law, so the contexts a tree's accepted path visits are distributed as those a chain visits, "
    "and at each context the chain accepts with probability beta = sum_v min(p, q) while k i.i.d. "
    "candidates accept at most f_k(beta) (the lemma, verify.alpha_star_upper_from_beta).",
    "Table 5 does not state its temperature nor whether 'depth 4' counts the root: every combination is "
    "shown (3 or 4 candidate levels; T = 1 or 0.6). Table 3's verification cost 121 for d5b3 says that "
    "dXbY counts the root (4 candidate levels); levels of the tree beyond the chain's are bounded by 1.",
    "The paper prints 2 decimals: a paper value counts as above the bound only when value - 0.005 exceeds "
    "the bound computed at the chain's value + 0.005. The paper gives no confidence intervals, so its "
    "sampling error over 200 prompts is not accounted for.",
)
BOUND_NOTE = (
    "(a): the same acceptance at every level; (b): any joint law of per-level acceptances (the concave "
    "envelope), printed as [a value some law attains, a true upper bound], within 0.01 of each other."
)


def _text(value) -> str:
    return "n/s" if pd.isna(value) else f"{value:g}" if isinstance(value, float) else str(value)


PAPER_HEADER = (
    "paper cell",
    "paper value",
    "chain levels",
    "Table 5 at T",
    "(a) same acceptance",
    "(b) bound at 1.89",
    "(b) upper at chain + 0.005",
    "verdict",
)
OWN_HEADER = (
    "chain run (EAL, 95% CI high)",
    "tree",
    "method",
    "accepted length (95% CI)",
    "without bonus",
    "per-level acceptance",
    "(a)",
    "(b) bound at chain EAL",
    "(b) upper at CI high",
    "verdict",
)


def _cell(row) -> str:
    keys = (row["table"], row["dataset"], f"T={_text(row['temperature'])}", row["tree"], row["method"])
    return " ".join(_text(key) for key in keys)


def _bound(row) -> str:
    return f"[{row['bound_low']:.3f}, {row['bound_high']:.3f}]"


def paper_table(frame: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    header = list(PAPER_HEADER)
    rows = frame[(frame["source"] == "paper") & (frame["verdict"] != FREE)]
    body = [
        [
            _cell(r),
            f"{r['value']:.2f}",
            str(int(r["chain_levels"])),
            f"{r['chain_temperature']:g}",
            f"{r['same_level_bound']:.3f}",
            _bound(r),
            f"{r['bound_high_at_chain_high']:.3f}",
            r["verdict"],
        ]
        for _, r in rows.iterrows()
    ]
    header[5] = f"(b) bound at {rows['chain_eal'].iloc[0]:.2f}" if len(rows) else header[5]
    return header, body


def free_cells(frame: pd.DataFrame) -> list[str]:
    """Paper cells no convention constrains, each with the first convention's reason."""
    paper = frame[frame["source"] == "paper"]
    constrained = {_cell(r) for _, r in paper[paper["verdict"] != FREE].iterrows()}
    out: dict[str, str] = {}
    for _, row in paper.iterrows():
        if _cell(row) not in constrained:
            out.setdefault(f"{_cell(row)} ({row['value']:.2f})", row["note"])
    return [f"{cell}: {why}" for cell, why in out.items()]


def own_table(frame: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    header = list(OWN_HEADER)
    rows = frame[frame["source"] == "ours"]
    body = []
    for _, r in rows.iterrows():
        no_bonus = "–" if pd.isna(r["no_bonus"]) else f"{r['no_bonus']:.3f}"
        levels = "–" if pd.isna(r["level_acceptance"]) else str(r["level_acceptance"]).replace(";", ", ")
        body.append(
            [
                f"{r['chain_tree']} ({int(r['chain_levels'])} levels): {r['chain_eal']:.3f} "
                f"({r['chain_eal_high']:.3f})",
                r["tree"],
                r["method"],
                f"{r['value']:.3f} [{r['value_low']:.3f}, {r['value_high']:.3f}]",
                no_bonus,
                levels,
                f"{r['same_level_bound']:.3f}",
                _bound(r),
                f"{r['bound_high_at_chain_high']:.3f}",
                r["verdict"] + (f" ({r['note']})" if isinstance(r["note"], str) and r["note"] else ""),
            ]
        )
    return header, body


def conclusion(frame: pd.DataFrame) -> list[str]:
    """What the rows support, no more: per Table 5 temperature, which paper cells exceed the bound."""
    paper = frame[(frame["source"] == "paper") & (frame["verdict"] != FREE)]
    out = []
    for temperature, rows in paper.groupby("chain_temperature", sort=False):
        above = rows[rows["verdict"] == ABOVE]
        cells = [
            f"{_cell(r)}: {r['value']:.2f} against at most {r['bound_high_at_chain_high']:.3f} "
            f"({int(r['chain_levels'])} chain levels)"
            for _, r in above.iterrows()
        ]
        if cells:
            out.append(
                f"If Table 5 ran at T={temperature:g}: {'; '.join(cells)}. Such an accepted length "
                f"exceeds what any exact verifier with i.i.d. candidates can reach on that tree, so, "
                f"under the assumptions below, the method that produced it was not exact. This "
                f"rests on the paper's numbers alone, not on our reading of Algorithm 1 nor on our "
                f"code; it says nothing of how far its output law is from the target's."
            )
        else:
            out.append(
                f"If Table 5 ran at T={temperature:g}: no paper cell it constrains exceeds the bound, "
                f"so under that reading the paper's numbers alone do not show inexactness."
            )
    ours = frame[(frame["source"] == "ours")]
    wrong = ours[(ours["verdict"] == ABOVE) & (ours["method"] != "resispec")]
    if len(ours):
        out.append(
            "Our runs: "
            + (
                f"{len(wrong)} exact-method row(s) exceed the bound, which would mean the "
                "bound or an assumption is wrong."
                if len(wrong)
                else "no exact method (optimal, "
                "specinfer, ers) exceeds the bound, as it must if the bound and its assumptions hold."
            )
        )
    return out


def _html_table(table_id: str, header: list[str], body: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    rows = "".join(
        f"<tr{' class=disagree' if ABOVE == r[-1].split(' (')[0] else ''}>"
        + "".join(f"<td>{html.escape(c)}</td>" for c in r)
        + "</tr>"
        for r in body
    )
    return f'<table id="{table_id}"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def _items(items) -> str:
    return "<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in items) + "</ul>"


OURS_INTRO = (
    "The same audit on our runs (every number ours: the Table 5 N = 1 run's accepted length bounds each "
    "complete tree of the same pair, dataset and temperature)."
)


def blocks(frame: pd.DataFrame) -> list[tuple[str, object]]:
    """The section's content as (kind, payload): 'heading', 'items', 'text' or 'table' (id, header, body)."""
    out = [
        ("heading", "Conclusion."),
        ("items", conclusion(frame)),
        ("heading", "Assumptions."),
        ("items", ASSUMPTIONS),
        ("text", BOUND_NOTE),
        ("table", ("paper-limits", *paper_table(frame))),
        ("text", "Paper cells that Table 5 does not constrain:"),
        ("items", free_cells(frame)),
    ]
    if (frame["source"] == "ours").any():
        out += [("text", OURS_INTRO), ("table", ("paper-limits-ours", *own_table(frame)))]
    return out


def section_html(frame: pd.DataFrame | None) -> str:
    if frame is None or frame.empty:
        return '<p class="note">No paper-limits table (results/tables/paper_limits.csv).</p>'
    render = {
        "heading": lambda text: f"<p><b>{html.escape(text)}</b></p>",
        "items": _items,
        "text": lambda text: f'<p class="note">{html.escape(text)}</p>',
        "table": lambda table: _html_table(*table),
    }
    return "\n".join(render[kind](payload) for kind, payload in blocks(frame))


def _latex_table(header: list[str], body: list[list[str]]) -> str:
    spec = "p{3.2cm}" + "l" * (len(header) - 2) + "p{3.2cm}"
    lines = [
        rf"\begin{{longtable}}{{{spec}}}",
        r"\toprule",
        " & ".join(rf"\textbf{{{latex_escape(h)}}}" for h in header) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(latex_escape(c) for c in row) + r" \\" for row in body]
    return "\n".join(lines + [r"\bottomrule", r"\end{longtable}", ""])


def _latex_items(items) -> str:
    return "\\begin{itemize}\n" + "".join(f"\\item {latex_escape(i)}\n" for i in items) + "\\end{itemize}\n"


def section_latex(frame: pd.DataFrame | None) -> str:
    if frame is None or frame.empty:
        return ""
    render = {
        "heading": lambda text: f"\\paragraph{{{latex_escape(text)}}}\n",
        "items": _latex_items,
        "text": lambda text: latex_escape(text) + "\n\n",
        "table": lambda table: "{\\scriptsize\n" + _latex_table(*table[1:]) + "}\n",
    }
    parts = [f"\\section*{{{latex_escape(TITLE)}}}\n"]
    return "".join(parts + [render[kind](payload) for kind, payload in blocks(frame)])
