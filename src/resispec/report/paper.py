"""The paper's reported numbers (Tables 1-6) as a tidy frame of cells.

One cell per printed number, keyed like our tidy tables:
``table, target, draft, dataset, temperature, tree, method, metric`` plus ``value``, ``baseline`` (for
ratio metrics), ``derived`` (True for ratios the report computes from printed numbers) and ``order``
(row order on the page). ``None`` in a key field means the paper does not state it.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pandas as pd
import yaml

KEY_FIELDS = ("target", "draft", "dataset", "temperature", "tree", "method")
CELL_COLUMNS = ("table", *KEY_FIELDS, "metric", "value", "baseline", "derived", "order")
RATIO_METRICS = ("speedup", "accepted_length_gain")
#: Derived ratios the page does not print but the report adds: table -> (metric, base metric, baseline).
DERIVED_RATIOS = {"table6": ("speedup", "throughput", "specinfer")}


def default_path() -> Path:
    """Path of the packaged ``paper_values.yaml``."""
    return Path(str(resources.files("resispec.report") / "paper_values.yaml"))


def load_raw(path: str | Path | None = None) -> dict:
    """The YAML document as a dict; raises ValueError when ``tables`` is missing."""
    path = Path(path) if path is not None else default_path()
    if not path.is_file():
        raise ValueError(f"paper values file not found: {path}")
    doc = yaml.safe_load(path.read_text())
    if not isinstance(doc, dict) or not isinstance(doc.get("tables"), dict):
        raise ValueError(f"{path}: expected a mapping with key 'tables'")
    return doc


def _baseline(spec: dict, method: str, metric: str) -> str | None:
    if metric not in RATIO_METRICS:
        return None
    base = spec.get("baselines", {}).get(metric)
    if base is None:
        raise ValueError(f"table {spec.get('_id')}: ratio metric {metric!r} needs baselines.{metric}")
    return method.split("+")[0] if base == "host" else base


def _row_cells(table: str, spec: dict, row: dict, order: int) -> list[dict]:
    keys = {field: spec.get("defaults", {}).get(field) for field in KEY_FIELDS}
    keys.update({k: v for k, v in row.items() if k in KEY_FIELDS})
    values = row.get("values")
    if not isinstance(values, dict) or not values:
        raise ValueError(f"paper table {table!r}, row {order}: missing 'values'")
    cells = []
    for name, value in values.items():
        if "/" not in name:
            raise ValueError(f"paper table {table!r}: value key {name!r} is not 'method/metric'")
        method, metric = name.split("/", 1)
        cell = {"table": table, **keys, "method": method, "metric": metric, "value": float(value)}
        cell.update(baseline=_baseline(spec, method, metric), derived=False, order=order)
        cells.append(cell)
    return cells


def _derived_cells(table: str, cells: list[dict]) -> list[dict]:
    if table not in DERIVED_RATIOS:
        return []
    metric, base_metric, baseline = DERIVED_RATIOS[table]
    by_key = {(c["order"], c["method"], c["metric"]): c for c in cells}
    out = []
    for (order, method, cell_metric), cell in by_key.items():
        base = by_key.get((order, baseline, base_metric))
        if cell_metric != base_metric or method == baseline or base is None:
            continue
        value = round(cell["value"] / base["value"], 2)
        out.append({**cell, "metric": metric, "value": value, "baseline": baseline, "derived": True})
    return out


def load_paper_values(path: str | Path | None = None) -> pd.DataFrame:
    """All paper cells as a DataFrame with columns ``CELL_COLUMNS``, in page order."""
    doc = load_raw(path)
    cells: list[dict] = []
    for table, spec in doc["tables"].items():
        rows = spec.get("rows")
        if not rows:
            raise ValueError(f"paper table {table!r} has no 'rows'")
        table_cells = []
        for order, row in enumerate(rows):
            table_cells.extend(_row_cells(table, {**spec, "_id": table}, row, order))
        cells.extend(table_cells + _derived_cells(table, table_cells))
    frame = pd.DataFrame(cells, columns=list(CELL_COLUMNS))
    return frame.astype({"value": float, "derived": bool, "order": int})


def table_info(path: str | Path | None = None) -> dict[str, dict]:
    """Per table: caption, notes and default models, for headings."""
    doc = load_raw(path)
    return {
        table: {
            "caption": spec.get("caption", ""),
            "notes": spec.get("notes", ""),
            "target": spec.get("defaults", {}).get("target"),
            "draft": spec.get("defaults", {}).get("draft"),
        }
        for table, spec in doc["tables"].items()
    }
