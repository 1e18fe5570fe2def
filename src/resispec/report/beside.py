"""Our own methods beside the paper's in every comparison table: ``optimal`` (the optimal exact verifier,
which attains alpha*) gets a row next to every ResiSpec and SpecInfer cell, with our value and no paper
value. Such rows are flagged ``ours_only`` in the comparison; findings about agreement with the paper
and the paper-vs-ours figures leave them out (``paper_rows``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from resispec.report.compare import compare_all
from resispec.verify.registry import methods

#: the paper methods (verifiers, possibly in a host: "sequoia+resispec") a row is added beside
SOURCES = ("resispec", "specinfer")


def beside_notes() -> dict[str, str]:
    """Registered methods shown beside the paper's -> the note their rows carry (``Method.beside_note``)."""
    return {m.name: m.beside_note for m in methods() if m.beside_note}


def twin_method(method: str, ours: str) -> str | None:
    """'resispec' / 'specinfer' -> ours; 'host+resispec' -> 'host+ours'; any other method -> None."""
    host, _, verifier = str(method).rpartition("+")
    if verifier not in SOURCES:
        return None
    return f"{host}+{ours}" if host else ours


def beside_cells(paper: pd.DataFrame, ours: str) -> pd.DataFrame:
    """Cells of ``ours`` for every paper cell of a SOURCES method: same key, metric and baseline, no
    paper value; one per (table, page row, method, metric)."""
    cells = []
    for cell in paper.to_dict("records"):
        method = twin_method(cell["method"], ours)
        if method is not None:
            cells.append({**cell, "method": method, "value": np.nan, "derived": False})
    frame = pd.DataFrame(cells, columns=paper.columns)
    return frame.drop_duplicates(["table", "order", "method", "metric"], ignore_index=True)


def beside_rows(
    paper: pd.DataFrame, tables: dict, *, reasons: dict | None = None, tree_aliases: dict | None = None
) -> pd.DataFrame:
    """Comparison rows of every method shown beside the paper's (``beside_notes``): ``ours_only`` True,
    no ratio, no agreement."""
    parts = []
    for ours, note in beside_notes().items():
        cells = beside_cells(paper, ours)
        if cells.empty:
            continue
        rows = compare_all(cells, tables, reasons=reasons, tree_aliases=tree_aliases, autoregressive=False)
        ran = rows["ours"].notna()
        rows.loc[ran, "note"] = [own_note(note, text) for text in rows.loc[ran, "note"]]
        parts.append(rows.assign(ratio=np.nan, agrees=None, verdict=None, ours_only=True))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def own_note(note: str, matched: str) -> str:
    """The row's note: what the method is, then the matching notes (tree stand-ins, derived ratios)
    without the paper-agreement rule, which does not apply to a row without a paper value."""
    kept = [part for part in str(matched or "").split("; ") if part and not part.startswith("agreement:")]
    return "; ".join([note, *kept])


def with_beside(comparison: pd.DataFrame, beside: pd.DataFrame) -> pd.DataFrame:
    """The comparison rows (``ours_only`` False for paper cells, True for its autoregressive speedups) and
    the beside rows, each after the paper row it sits beside."""
    flags = comparison["ours_only"] if "ours_only" in comparison.columns else False
    paper = comparison.assign(ours_only=pd.Series(flags, index=comparison.index).fillna(False).astype(bool))
    if beside.empty:
        return paper
    both = pd.concat([paper, beside], ignore_index=True)
    return both.sort_values(["table", "order"], kind="stable", ignore_index=True)


def paper_rows(comparison: pd.DataFrame) -> pd.DataFrame:
    """Only the rows of paper cells (what agreement findings and paper-vs-ours figures are about)."""
    if "ours_only" not in comparison.columns:
        return comparison
    return comparison[~comparison["ours_only"].astype(bool)]
