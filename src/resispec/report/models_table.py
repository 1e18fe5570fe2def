"""The report's model table: how each model was prepared and how well each draft matches its target."""

from __future__ import annotations

import html
import json
from pathlib import Path

COLUMNS = ("model", "kind", "teacher", "compute share", "acceptance T=1", "acceptance T=0.6")
COLUMNS += ("steps", "seconds")


def model_rows(ready_files) -> list[dict]:
    """One row per READY.json written by `resispec prepare-model`."""
    rows = []
    for path in ready_files or []:
        info = json.loads(Path(path).read_text())
        acceptance = info.get("acceptance") or {}
        rows.append(
            {
                "model": info.get("model", Path(path).parent.name),
                "kind": info.get("kind", ""),
                "teacher": info.get("teacher", ""),
                "compute share": _fmt(info.get("compute_ratio"), "{:.1%}"),
                "acceptance T=1": _fmt(acceptance.get("1.0"), "{:.3f}"),
                "acceptance T=0.6": _fmt(acceptance.get("0.6"), "{:.3f}"),
                "steps": _fmt(info.get("steps"), "{}"),
                "seconds": _fmt(info.get("seconds"), "{:.0f}"),
            }
        )
    return rows


def _fmt(value, pattern: str) -> str:
    return "" if value is None else pattern.format(value)


def models_html(rows: list[dict]) -> str:
    """An HTML table (empty string without rows). Acceptance: mean of sum_v min(p, q) over held-out
    contexts for one candidate, as measured when the model was prepared."""
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(row[c]))}</td>" for c in COLUMNS) + "</tr>" for row in rows
    )
    return f'<table id="models-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
