"""Reading the workflow's tidy results tables (contract: docs/architecture.md)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from resispec.verify.registry import names

TIDY_COLUMNS = (
    "table",
    "target",
    "draft",
    "dataset",
    "temperature",
    "tree",
    "method",
    "metric",
    "mean",
    "ci_low",
    "ci_high",
    "n",
)
NODE_COLUMNS = ("method", "dataset", "temperature", "acceptance", "alpha_star", "kl", "tv")
TABLES = ("table1", "table2", "table3", "table4", "table5", "table6", "figure1", "figure3", "audit")


def _check_columns(frame: pd.DataFrame, required: tuple[str, ...], path: Path) -> None:
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing} (expected {list(required)})")


BASELINE = "autoregressive"  #: the target alone, in every run: labelled as itself whatever the host


def method_label(host, verifier: str) -> str:
    """Report method id from the aggregator's (host, method) columns.

    No host or host 'specinfer', or the ``autoregressive`` baseline: the verifier itself. Otherwise
    'host+verifier' for an add-on verifier (resispec, ers, optimal, a plugin's) and 'host' for a host's own
    verifier (``Method.host_verifier``):
    (sequoia, sequoia) -> 'sequoia', (sequoia, resispec) -> 'sequoia+resispec', (eagle, sequoia) -> 'eagle'.
    """
    host = "" if host is None or (isinstance(host, float) and pd.isna(host)) else str(host)
    if host in ("", "specinfer") or verifier == BASELINE:
        return verifier
    if verifier in names(host_verifier=True):  # the host's own verifier (``Method.host_verifier``)
        return host
    return f"{host}+{verifier}"


def read_tidy(path: str | Path) -> pd.DataFrame:
    """One tidy CSV, validated; key columns as strings, ``temperature`` and numbers as floats.

    When the file has a ``host`` column, ``method`` becomes the report id (``method_label``) and the
    verifier is kept in ``verifier``.
    """
    path = Path(path)
    frame = pd.read_csv(path, dtype={"target": str, "draft": str, "dataset": str, "tree": str})
    _check_columns(frame, TIDY_COLUMNS, path)
    for column in ("temperature", "mean", "ci_low", "ci_high", "n"):
        frame[column] = pd.to_numeric(frame[column], errors="raise").astype(float)
    for column in ("table", "method", "metric"):
        frame[column] = frame[column].astype(str)
    frame["verifier"] = frame["method"]
    if "host" in frame.columns:
        frame["method"] = [method_label(h, v) for h, v in zip(frame["host"], frame["verifier"], strict=True)]
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


def _node_files(paths) -> list[Path]:
    if paths is None:
        return []
    if isinstance(paths, str | Path):
        paths = [paths]
    files = []
    for path in map(Path, paths):
        files.extend(sorted(path.glob("*.csv")) if path.is_dir() else [path] if path.is_file() else [])
    return files


def read_nodes(paths) -> pd.DataFrame | None:
    """Per-node audit rows from a file, a folder of CSVs (``results/exactness/``) or a list of either.

    Each file needs ``NODE_COLUMNS``; None when ``paths`` is None or names no existing file.
    """
    frames = []
    for path in _node_files(paths):
        frame = pd.read_csv(path)
        _check_columns(frame, NODE_COLUMNS, path)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else None


def models(frame: pd.DataFrame | None) -> str:
    """Our model pair(s) in a table, as 'target / draft' (several joined by '; ')."""
    if frame is None or frame.empty:
        return "n/a"
    pairs = frame[["target", "draft"]].drop_duplicates().astype(str).itertuples(index=False)
    return "; ".join(f"{target} / {draft}" for target, draft in pairs)
