"""Reading the workflow's tidy results tables (contract: docs/architecture.md)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

TIDY_COLUMNS = (
    "table", "target", "draft", "dataset", "temperature", "tree", "method",
    "metric", "mean", "ci_low", "ci_high", "n",
)  # fmt: skip
NODE_COLUMNS = ("method", "dataset", "temperature", "acceptance", "alpha_star", "kl", "tv")
TABLES = ("table1", "table2", "table3", "table4", "table5", "table6", "figure1", "figure3", "audit")


def _check_columns(frame: pd.DataFrame, required: tuple[str, ...], path: Path) -> None:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing} (expected {list(required)})")


def read_tidy(path: str | Path) -> pd.DataFrame:
    """One tidy CSV, validated; key columns as strings, ``temperature`` and numbers as floats."""
    path = Path(path)
    frame = pd.read_csv(path, dtype={"target": str, "draft": str, "dataset": str, "tree": str})
    _check_columns(frame, TIDY_COLUMNS, path)
    for column in ("temperature", "mean", "ci_low", "ci_high", "n"):
        frame[column] = pd.to_numeric(frame[column], errors="raise").astype(float)
    for column in ("table", "method", "metric"):
        frame[column] = frame[column].astype(str)
    return frame


def load_tables(tables_dir: str | Path, names: tuple[str, ...] = TABLES) -> dict[str, pd.DataFrame]:
    """``{name: frame}`` for every ``{tables_dir}/{name}.csv`` that exists (absent ones are left out)."""
    tables_dir = Path(tables_dir)
    if not tables_dir.is_dir():
        raise ValueError(f"tables_dir is not a directory: {tables_dir}")
    return {
        name: read_tidy(tables_dir / f"{name}.csv")
        for name in names
        if (tables_dir / f"{name}.csv").is_file()
    }


def read_nodes(path: str | Path | None) -> pd.DataFrame | None:
    """The per-node audit file ``results/audit/nodes.csv``, or None when ``path`` is None or absent."""
    if path is None or not Path(path).is_file():
        return None
    frame = pd.read_csv(path)
    _check_columns(frame, NODE_COLUMNS, Path(path))
    return frame


def models(frame: pd.DataFrame | None) -> str:
    """Our model pair(s) in a table, as 'target / draft' (several joined by '; ')."""
    if frame is None or frame.empty:
        return "n/a"
    pairs = frame[["target", "draft"]].drop_duplicates().astype(str).itertuples(index=False)
    return "; ".join(f"{target} / {draft}" for target, draft in pairs)
