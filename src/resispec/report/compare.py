"""Paper cells joined with our tidy results: paper value, ours with 95% CI, the ratio, a verdict, or why
not run.

Matching is per cell key (table, dataset, temperature, tree, method, metric); model names are not part
of the key (our default run uses other models) and are shown beside the tables. A paper key field that
is None (not stated) matches any of ours; when several of our rows match, the first in sorted order is
used and the note says so. Ratio metrics (speedup, accepted_length_gain) come from the aggregator's
paired rows ``{metric}_vs_{baseline verifier}`` (paired bootstrap over the same prompts); only when
those are missing are they derived from the two means with a delta-method 95% interval (independence
assumed, and the note says so). ``marginal_gain``/``efficiency`` (Table 5) are differences of accepted
lengths between consecutive trees d4bN.

Verdicts (``verdict``) are defined in `resispec.report.verdicts`; ours-only rows (speedups over
autoregressive decoding) come from `resispec.report.ours_only`.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from resispec.report.ours_only import AR_METRIC, autoregressive_rows
from resispec.report.paper import RATIO_METRICS
from resispec.report.verdicts import FP_KL_LEVEL, HALF_WIDTH_LIMIT, VERDICTS, verdict

__all__ = [
    "AR_METRIC",
    "FP_KL_LEVEL",
    "HALF_WIDTH_LIMIT",
    "VERDICTS",
    "compare_all",
    "compare_table",
    "match_cell",
]

#: Metrics whose ours/paper ratio is meaningless across hardware; the speedup cells carry the comparison.
NOT_COMPARABLE = {"throughput": "tok/s differ across hardware: compare the speedup rows instead"}
MATCH_FIELDS = ("method", "dataset", "temperature", "tree")
#: Metrics whose agreement with the paper is meaningful although our models differ (they get shaded).
COMPARABLE = ("speedup", "accepted_length_gain", "kl", "verification_cost", "marginal_gain", "efficiency")
Z95 = 1.959963984540054


def _unstated(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _se(low: float, high: float) -> float:
    return (high - low) / (2 * Z95)


def _select(ours: pd.DataFrame, cell: dict, metric: str, **override) -> tuple[pd.DataFrame, str | None]:
    """Rows of ``ours`` matching the cell key; on no match also the first failing field as a reason."""
    rows = ours
    for field in MATCH_FIELDS:
        value = override.get(field, cell[field])
        if _unstated(value) or (field == "method" and value == "any"):
            continue
        if field == "temperature":
            keep = np.isclose(rows[field].to_numpy(dtype=float), float(value))
        else:
            keep = (rows[field].astype(str) == str(value)).to_numpy()
        if not keep.any():
            have = sorted({str(v) for v in rows[field]})
            return rows.iloc[
                0:0
            ], f"our run has no rows with {field}={value} (have: {', '.join(have) or 'none'})"
        rows = rows[keep]
    rows = rows[rows["metric"] == metric]
    if rows.empty:
        return rows, f"our run did not record metric {metric!r} for this configuration"
    rows = rows[rows["mean"].notna()]
    if rows.empty:
        return rows, f"our run recorded {metric!r} here but its value is not finite (NaN)"
    return rows.sort_values(["dataset", "temperature", "tree", "method"]), None


def _ours(row: pd.Series) -> dict:
    resolved = {f"our_{f}": row[f] for f in ("dataset", "temperature", "tree")}
    return {
        "ours": row["mean"],
        "ours_low": row["ci_low"],
        "ours_high": row["ci_high"],
        "n": row["n"],
        **resolved,
    }


def _ratio(num: pd.Series, den: pd.Series) -> dict:
    ratio = num["mean"] / den["mean"]
    rel = math.hypot(
        _se(num["ci_low"], num["ci_high"]) / num["mean"], _se(den["ci_low"], den["ci_high"]) / den["mean"]
    )
    return {
        "ours": ratio,
        "ours_low": ratio * math.exp(-Z95 * rel),
        "ours_high": ratio * math.exp(Z95 * rel),
        "n": min(num["n"], den["n"]),
    }


def _difference(high: pd.Series, low: pd.Series, scale: float) -> dict:
    diff = (high["mean"] - low["mean"]) / scale
    half = Z95 * math.hypot(_se(high["ci_low"], high["ci_high"]), _se(low["ci_low"], low["ci_high"])) / scale
    return {"ours": diff, "ours_low": diff - half, "ours_high": diff + half, "n": min(high["n"], low["n"])}


def candidates(tree: str) -> int:
    """Candidates per node of a tree id: N of 'k{N}d{depth}' (N i.i.d. chains) or b of 'd{depth}b{b}'."""
    match = re.fullmatch(r"k(\d+)d\d+", str(tree)) or re.fullmatch(r"d\d+b(\d+)", str(tree))
    if not match:
        raise ValueError(f"tree {tree!r} is neither k<N>d<depth> nor d<depth>b<branch>")
    return int(match.group(1))


def _match_ratio(ours: pd.DataFrame, cell: dict, base_metric: str) -> tuple[dict | None, str | None]:
    """A ratio cell: our paired row of the numerator against the baseline's verifier, else delta method."""
    rows, why = _select(ours, cell, base_metric)
    if why:
        return None, why
    num = rows.iloc[0]
    resolved = {f: num[f] for f in ("dataset", "temperature", "tree")}
    den, why = _select(ours, {**cell, **resolved}, base_metric, method=cell["baseline"])
    if why:
        return None, f"baseline {cell['baseline']}: {why}"
    verifier = den.iloc[0].get("verifier", cell["baseline"])
    paired, why = _select(ours, {**cell, **resolved}, f"{cell['metric']}_vs_{verifier}")
    if why is None:
        return {**_ours(paired.iloc[0]), "derived_ours": False, "paired": True}, None
    return {
        **_ratio(num, den.iloc[0]),
        "derived_ours": True,
        **{f"our_{k}": v for k, v in resolved.items()},
    }, None


def _match_difference(ours: pd.DataFrame, cell: dict, prev_tree: str) -> tuple[dict | None, str | None]:
    cur, why = _select(ours, cell, "accepted_length")
    if why:
        return None, why
    prev, why = _select(ours, cell, "accepted_length", tree=prev_tree)
    if why:
        return None, f"previous tree {prev_tree}: {why}"
    scale = 1.0 if cell["metric"] == "marginal_gain" else candidates(cell["tree"]) - candidates(prev_tree)
    resolved = {f"our_{f}": cur.iloc[0][f] for f in ("dataset", "temperature", "tree")}
    return {**_difference(cur.iloc[0], prev.iloc[0], scale), "derived_ours": True, **resolved}, None


def match_cell(
    ours: pd.DataFrame, cell: dict, prev_tree: str | None = None
) -> tuple[dict | None, str | None]:
    """Our value for one paper cell: ``({ours, ours_low, ours_high, n, ...}, None)`` or ``(None, reason)``."""
    rows, why = _select(ours, cell, cell["metric"])
    if why is None:
        note = f"{len(rows)} of our rows match; showing the first" if len(rows) > 1 else None
        found = {**_ours(rows.iloc[0]), "derived_ours": False, "match_note": note}
        if cell["metric"] == "kl":
            upper, _ = _select(ours, {**cell, **{f: rows.iloc[0][f] for f in MATCH_FIELDS[1:]}}, "kl_upper")
            found["ours_upper_high"] = upper.iloc[0]["ci_high"] if not upper.empty else found["ours_high"]
        return found, None
    if cell["metric"] in RATIO_METRICS and cell.get("baseline"):
        return _match_ratio(ours, cell, "throughput" if cell["metric"] == "speedup" else "accepted_length")
    if cell["metric"] in ("marginal_gain", "efficiency") and prev_tree is not None:
        return _match_difference(ours, cell, prev_tree)
    return None, why


def _reason(reasons: dict, cell: dict, fallback: str) -> str:
    """Stated reason for 'table/method/metric', 'table/method', 'table/host' (of 'host+x') or 'table'."""
    table, method = cell["table"], cell["method"]
    keys = (
        f"{table}/{method}/{cell['metric']}",
        f"{table}/{method}",
        f"{table}/{method.split('+')[0]}",
        table,
    )
    for key in keys:
        if key in reasons:
            return f"not run: {reasons[key]}"
    return f"not run: {fallback}"


def _previous_trees(cells: pd.DataFrame) -> dict[int, str]:
    trees = cells.sort_values("order").drop_duplicates("order").set_index("order")["tree"]
    return {order: trees.iloc[i - 1] for i, order in enumerate(trees.index) if i > 0}


def _pairs(ours: pd.DataFrame | None) -> list[tuple[str, str]]:
    if ours is None or ours.empty:
        return []
    return sorted(set(zip(ours["target"].astype(str), ours["draft"].astype(str), strict=True)))


def _cell_row(cell: dict, found: dict | None, why: str | None, reasons: dict, pair: str | None) -> dict:
    row = {**cell, "ours": np.nan, "ours_low": np.nan, "ours_high": np.nan, "n": np.nan, "ratio": np.nan}
    row.update(our_dataset=None, our_temperature=np.nan, our_tree=None, our_models=pair)
    row.update(derived_ours=False, paired=False, agrees=None, verdict=None, note="")
    if found is None:
        row["note"] = _reason(reasons, cell, why)
        return row
    row.update({k: v for k, v in found.items() if k in row})
    row["note"] = _notes(cell, found)
    if cell["metric"] not in NOT_COMPARABLE:
        row["ratio"] = row["ours"] / cell["value"] if cell["value"] else np.nan
        row["verdict"] = verdict(cell, {**row, **found})
        row["agrees"] = {"agrees": True, "disagrees": False}.get(row["verdict"])
    return row


def compare_table(
    cells: pd.DataFrame, ours: pd.DataFrame | None, *, reasons: dict | None = None
) -> pd.DataFrame:
    """One paper table's cells with our values, the ratio ours/paper, agreement and notes.

    One row per paper cell and per model pair of ours that has it (our tables may hold several pairs,
    e.g. Table 6); one 'not run' row with the reason when no pair has it.
    """
    reasons = reasons or {}
    prev = _previous_trees(cells)
    pairs = _pairs(ours)
    out = []
    for cell in cells.sort_values(["order"], kind="stable").to_dict("records"):
        why = f"results/tables/{cell['table']}.csv was not produced by this run"
        matched = []
        for target, draft in pairs:
            subset = ours[(ours["target"].astype(str) == target) & (ours["draft"].astype(str) == draft)]
            found, why = match_cell(subset, cell, prev.get(cell["order"]))
            if found is not None:
                matched.append(_cell_row(cell, found, None, reasons, f"{target} / {draft}"))
        out.extend(matched or [_cell_row(cell, None, why, reasons, None)])
    return pd.DataFrame(out)


def _notes(cell: dict, found: dict) -> str:
    notes = []
    if isinstance(cell.get("paper_tree"), str) and cell["paper_tree"] != cell["tree"]:
        notes.append(f"our tree {cell['tree']} stands in for the paper's {cell['paper_tree']}")
    if cell["metric"] == "kl":
        notes.append(f"full vocabulary; verdict: both below or both above {FP_KL_LEVEL:g}")
    if cell["metric"] in NOT_COMPARABLE:
        notes.append(NOT_COMPARABLE[cell["metric"]])
    if found.get("derived_ours"):
        notes.append("ours derived from our means (delta-method CI, independence assumed)")
    if found.get("paired"):
        notes.append("paired bootstrap over the same prompts")
    if cell.get("derived"):
        notes.append("paper value derived from its printed throughputs")
    if found.get("match_note"):
        notes.append(found["match_note"])
    return "; ".join(notes)


def alias_trees(paper: pd.DataFrame, aliases: dict | None) -> pd.DataFrame:
    """Replace paper trees by our stand-ins (``{paper_tree: our_tree}``, for runs that scale trees down);
    the paper's tree is kept in ``paper_tree``."""
    paper = paper.assign(paper_tree=paper["tree"])
    if aliases:
        paper["tree"] = [aliases.get(t, t) if isinstance(t, str) else t for t in paper["tree"]]
    return paper


def compare_all(
    paper: pd.DataFrame,
    tables: dict[str, pd.DataFrame],
    *,
    reasons: dict | None = None,
    tree_aliases: dict | None = None,
    autoregressive: bool = True,
) -> pd.DataFrame:
    """All paper tables compared; one row per paper cell (and per model pair of ours); with
    ``autoregressive``, each table's ours-only speedups over autoregressive decoding after its cells."""
    paper = alias_trees(paper, tree_aliases)
    parts = []
    for name, cells in paper.groupby("table", sort=True):
        compared = compare_table(cells, tables.get(name), reasons=reasons)
        extra = (
            autoregressive_rows(name, tables.get(name), int(cells["order"].max()) + 1)
            if autoregressive
            else []
        )
        parts.append(pd.concat([compared, pd.DataFrame(extra)], ignore_index=True) if extra else compared)
    return pd.concat(parts, ignore_index=True)
