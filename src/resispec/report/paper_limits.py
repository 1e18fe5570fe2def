"""The paper's numbers against the exact limit: for every ResiSpec accepted length of the paper
whose setting the paper's single-candidate number (Table 5, N = 1) constrains, the most any exact verifier
can accept on that tree (`resispec.audit.tree_limits`), under each convention; the same audit on our own
runs. One tidy frame, ``results/tables/paper_limits.csv`` (columns ``COLUMNS``).
"""

from __future__ import annotations

import re
from functools import lru_cache

import pandas as pd

from resispec.audit.tree_limits import tree_limit
from resispec.verify.registry import names

COLUMNS = (
    "source",
    "convention",
    "table",
    "target",
    "draft",
    "dataset",
    "temperature",
    "tree",
    "method",
    "value",
    "value_low",
    "value_high",
    "no_bonus",
    "level_acceptance",
    "chain_tree",
    "chain_temperature",
    "chain_levels",
    "chain_eal",
    "chain_eal_high",
    "tree_levels",
    "k",
    "same_level_bound",
    "bound_low",
    "bound_high",
    "bound_high_at_chain_high",
    "verdict",
    "note",
)
PRINTED_HALF_STEP = 0.005  # the paper prints accepted lengths to 2 decimals: the true value is within this
TABLE5_TEMPERATURES = (1.0, 0.6)  # Table 5 states no temperature: the two of Table 1
ABOVE, ABOVE_POINT, WITHIN, FREE = (
    "above the bound",
    "above at the point value only",
    "within the bound",
    ("not constrained"),
)
COMPLETE = re.compile(r"d(\d+)b(\d+)")
CHAIN = re.compile(r"k1([dc])(\d+)")  # a single chain: kNdD counts the root, kNcL does not


def own_methods() -> tuple[str, ...]:
    """The methods with i.i.d. candidates (the registry's; built-ins: specinfer, ers, optimal, resispec)."""
    return names(draws="with_replacement")


def __getattr__(name: str):
    if name == "OWN_METHODS":
        return own_methods()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def chain_levels(tree: str) -> int | None:
    """Candidate levels of a single-chain tree id: k1dD -> D - 1 (root counted), k1cL -> L; else None."""
    match = CHAIN.fullmatch(str(tree))
    if not match:
        return None
    return int(match.group(2)) - (match.group(1) == "d")


def complete_tree(tree) -> tuple[int, int] | None:
    """(candidate levels, branching) of a dXbY id (X counts the root), else None."""
    match = COMPLETE.fullmatch(str(tree)) if isinstance(tree, str) else None
    return (int(match.group(1)) - 1, int(match.group(2))) if match else None


def stated(value) -> bool:
    """A key field the paper states (not None / NaN)."""
    return value is not None and not (isinstance(value, float) and value != value)


@lru_cache(maxsize=256)
def _limit(chain_eal: float, levels: int, tree_levels: int, k: int, tolerance: float):
    return tree_limit(min(chain_eal, levels + 1.0), levels, tree_levels, k, tolerance=tolerance)


def bound_columns(chain_eal, chain_eal_high, levels, tree, tolerance) -> dict:
    """The bound columns of one (chain, tree) pair; the upper value also at the chain's upper end."""
    tree_levels, k = complete_tree(tree)
    at = _limit(float(chain_eal), levels, tree_levels, k, tolerance)
    high = _limit(float(chain_eal_high), levels, tree_levels, k, tolerance)
    return {
        "chain_levels": levels,
        "chain_eal": chain_eal,
        "chain_eal_high": chain_eal_high,
        "tree_levels": tree_levels,
        "k": k,
        "same_level_bound": at.same_level_limit,
        "bound_low": at.envelope_low,
        "bound_high": at.envelope_high,
        "bound_high_at_chain_high": high.envelope_high,
    }


def verdict(value: float, value_low: float, bounds: dict) -> str:
    """Above the bound only when the value's lower end exceeds the bound at the chain's upper end."""
    if value_low > bounds["bound_high_at_chain_high"]:
        return ABOVE
    return ABOVE_POINT if value > bounds["bound_high"] else WITHIN


def paper_chain(paper: pd.DataFrame) -> dict:
    """Table 5's single-candidate cell (N = 1), with Table 1's pair where Table 5 names none."""
    rows = paper[(paper["table"] == "table5") & (paper["metric"] == "accepted_length")]
    rows = rows[[chain_levels(tree) is not None for tree in rows["tree"]]]
    if rows.empty:
        raise ValueError("paper values: no Table 5 accepted length for a single chain (tree k1d<depth>)")
    chain = rows.iloc[0].to_dict()
    table1 = paper[paper["table"] == "table1"]
    for field in ("target", "draft"):
        if not stated(chain[field]) and not table1.empty:
            chain[field] = table1.iloc[0][field]
    return chain


def conventions(chain: dict) -> list[tuple[str, int, float]]:
    """(name, chain levels, Table 5 temperature): 'depth D' counting the root or not, T of Table 1."""
    depth = int(CHAIN.fullmatch(chain["tree"]).group(2))
    temperatures = [chain["temperature"]] if stated(chain["temperature"]) else TABLE5_TEMPERATURES
    return [
        (f"depth {depth} = {levels} candidate levels, Table 5 at T={t:g}", levels, float(t))
        for levels in (depth - 1, depth)
        for t in temperatures
    ]


def why_free(cell: dict, chain: dict, temperature: float) -> str | None:
    """Why Table 5's number does not constrain ``cell`` under a convention, or None when it does."""
    if not stated(cell["tree"]):
        return "the paper does not state the tree"
    if complete_tree(cell["tree"]) is None:
        return f"tree {cell['tree']} is not a complete dXbY tree"
    for field, what in (("target", "target"), ("draft", "draft"), ("dataset", "dataset")):
        if not stated(cell[field]):
            return f"the paper does not state the {what}"
        if cell[field] != chain[field]:
            return f"another {what} ({cell[field]}; Table 5: {chain[field]})"
    if not stated(cell["temperature"]) or float(cell["temperature"]) != temperature:
        return f"T={cell['temperature']}, while this convention takes Table 5 at T={temperature:g}"
    return None


def paper_rows(paper: pd.DataFrame, *, tolerance: float = 0.01) -> list[dict]:
    """One row per (ResiSpec accepted-length cell, convention)."""
    chain = paper_chain(paper)
    cells = paper[
        paper["method"].str.split("+").str[-1].eq("resispec") & paper["metric"].eq("accepted_length")
    ]
    rows = []
    for name, levels, temperature in conventions(chain):
        for cell in cells.to_dict("records"):
            row = {key: cell[key] for key in ("table", "target", "draft", "dataset", "temperature", "tree")}
            row.update(
                source="paper",
                convention=name,
                method=cell["method"],
                value=cell["value"],
                value_low=cell["value"] - PRINTED_HALF_STEP,
                value_high=cell["value"] + PRINTED_HALF_STEP,
                chain_tree=chain["tree"],
                chain_temperature=temperature,
            )
            reason = why_free(cell, chain, temperature)
            if reason:
                rows.append({**row, "chain_levels": levels, "verdict": FREE, "note": reason})
                continue
            bounds = bound_columns(
                chain["value"], chain["value"] + PRINTED_HALF_STEP, levels, cell["tree"], tolerance
            )
            rows.append({**row, **bounds, "verdict": verdict(cell["value"], row["value_low"], bounds)})
    return rows


def _metric(frame: pd.DataFrame, row: pd.Series, metric: str) -> pd.Series | None:
    keys = ("target", "draft", "dataset", "temperature", "tree", "method")
    match = frame[(frame["metric"] == metric) & (frame[list(keys)] == row[list(keys)]).all(axis=1)]
    return None if match.empty else match.iloc[0]


def _levels_text(frame: pd.DataFrame, row: pd.Series) -> str:
    shares, d = [], 1
    while (found := _metric(frame, row, f"level_acceptance_{d}")) is not None:
        shares.append(f"{found['mean']:.3f}")
        d += 1
    return ";".join(shares)


def own_chains(tables: dict) -> list[pd.Series]:
    """Our Table 5 single-chain runs (specinfer's accepted length on k1dD / k1cL)."""
    frame = tables.get("table5")
    if frame is None:
        return []
    rows = frame[(frame["metric"] == "accepted_length") & (frame["method"] == "specinfer")]
    return [row for _, row in rows.iterrows() if chain_levels(row["tree"]) is not None]


def own_trees(tables: dict, chain: pd.Series) -> list[tuple[pd.Series, pd.DataFrame]]:
    """Accepted lengths of OWN_METHODS on complete trees run with the chain's pair, dataset and T."""
    found, seen = [], set()
    for frame in tables.values():
        own = own_methods()
        rows = frame[(frame["metric"] == "accepted_length") & frame["method"].isin(own)]
        for _, row in rows.iterrows():
            same = all(row[key] == chain[key] for key in ("target", "draft", "dataset", "temperature"))
            if same and complete_tree(row["tree"]) and (row["tree"], row["method"]) not in seen:
                seen.add((row["tree"], row["method"]))
                found.append((row, frame))
    return sorted(found, key=lambda pair: (pair[0]["tree"], own_methods().index(pair[0]["method"])))


def own_rows(tables: dict, *, tolerance: float = 0.01) -> list[dict]:
    """The same audit on our runs: each chain run against each complete tree of the same setting."""
    rows = []
    for chain in own_chains(tables):
        levels = chain_levels(chain["tree"])
        for row, frame in own_trees(tables, chain):
            no_bonus = _metric(frame, row, "accepted_length_no_bonus")
            bounds = bound_columns(chain["mean"], chain["ci_high"], levels, row["tree"], tolerance)
            out = {
                key: row[key]
                for key in ("table", "target", "draft", "dataset", "temperature", "tree", "method")
            }
            out.update(
                source="ours",
                convention=f"{chain['tree']}: {levels} candidate levels",
                value=row["mean"],
                value_low=row["ci_low"],
                value_high=row["ci_high"],
                chain_tree=chain["tree"],
                chain_temperature=chain["temperature"],
                level_acceptance=_levels_text(frame, row),
                no_bonus=None if no_bonus is None else no_bonus["mean"],
                **bounds,
            )
            out["verdict"] = verdict(row["mean"], row["ci_low"], bounds)
            if out["verdict"] == ABOVE and row["method"] != "resispec":
                out["note"] = "an exact method above the bound: the bound or an assumption is wrong"
            rows.append(out)
    return rows


def limits_table(paper: pd.DataFrame, tables: dict, *, tolerance: float = 0.01) -> pd.DataFrame:
    """``paper_limits.csv``: the paper's rows, then ours."""
    rows = paper_rows(paper, tolerance=tolerance) + own_rows(tables, tolerance=tolerance)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def paper_limits_frame(tables_dir, paper: pd.DataFrame, tables: dict) -> pd.DataFrame:
    """``{tables_dir}/paper_limits.csv`` when the workflow wrote it, else computed from ``paper`` and
    ``tables`` here (a few seconds)."""
    from pathlib import Path

    path = Path(tables_dir) / "paper_limits.csv"
    if path.is_file():
        frame = pd.read_csv(path)
        missing = [c for c in COLUMNS if c not in frame.columns]
        if missing:
            raise ValueError(f"{path}: missing columns {missing} (expected {list(COLUMNS)})")
        return frame
    return limits_table(paper, tables)
