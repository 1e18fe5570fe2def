"""Per-node acceptance against each method's own bound, from the per-node audit rows.

The bound of a method is what no exact verifier can beat with that method's candidates: alpha* for k
i.i.d. candidates (specinfer, ers, optimal, resispec), alpha*_wor without replacement (sequoia, column
``bound``), p(top-k of q) for fixed candidates (deterministic). Exact methods are judged by their
distance below it; an acceptance above it (beyond ``BOUND_TOLERANCE``) proves a verifier inexact.
"""

from __future__ import annotations

import pandas as pd

from resispec.report.exactness import draws
from resispec.verify.registry import names

BOUND_TOLERANCE = 1e-9  #: acceptance within this of the bound counts as attaining it (exact per-node values)
BOUND_NAMES = {
    "with_replacement": "alpha*",
    "without_replacement": "alpha*_wor",
    "deterministic": "p(top-k of q)",
}


def __getattr__(name: str):
    """``METHOD_ORDER``: methods first in the registry's order (the figure's and the findings'), any
    others (not registered here) after them."""
    if name == "METHOD_ORDER":
        return names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def ordered_methods(nodes: pd.DataFrame) -> list[str]:
    present, order = list(dict.fromkeys(nodes["method"])), names()
    return [m for m in order if m in present] + sorted(m for m in present if m not in order)


def own_bound(rows: pd.DataFrame, method: str) -> tuple[pd.Series | None, str]:
    """(bound per node, its name) of one method's rows; alpha* for i.i.d. candidates; None when the
    method's own bound was not recorded (per-node files written before the ``bound`` column)."""
    how = draws(method)
    if how == "with_replacement":
        return rows["alpha_star"], BOUND_NAMES[how]
    if "bound" in rows.columns and rows["bound"].notna().all():
        return rows["bound"], BOUND_NAMES.get(how, "its bound")
    return None, BOUND_NAMES.get(how, "its bound")


def _exact_sentence(method: str, rows: pd.DataFrame, bound: pd.Series, name: str) -> str:
    gap = bound - rows["acceptance"]
    attained = int((gap.abs() <= BOUND_TOLERANCE).sum())
    return (
        f"{method} (exact): mean acceptance {rows['acceptance'].mean():.4f} against mean {name} "
        f"{bound.mean():.4f} over {len(rows)} nodes, on average {gap.mean():.3g} below {name} "
        f"({gap.mean() / bound.mean():.2%} of it), at most {gap.max():.3g}; within {BOUND_TOLERANCE:g} of "
        f"{name} on {attained} of {len(rows)} nodes."
    )


def _inexact_sentence(method: str, rows: pd.DataFrame, bound: pd.Series, name: str) -> str:
    excess = rows["acceptance"] - bound
    above = excess > BOUND_TOLERANCE
    head = (
        f"{method} (not exact): mean acceptance {rows['acceptance'].mean():.4f} against mean {name} "
        f"{bound.mean():.4f} over {len(rows)} nodes"
    )
    if not above.any():
        return f"{head}; never above {name}, so its acceptance alone does not prove it inexact."
    return (
        f"{head}; above {name} on {int(above.sum())} of {len(rows)} nodes, by up to {excess.max():.3g} "
        f"(mean excess on those nodes {excess[above].mean():.3g}); no exact verifier accepts more than "
        f"{name}."
    )


def bound_findings(nodes: pd.DataFrame | None, exact_methods: tuple[str, ...]) -> list[str]:
    """One sentence per method: how far an exact method stays below its bound, by how much an inexact
    one exceeds it."""
    if nodes is None or nodes.empty:
        return ["No per-node audit was recorded, so no method was compared with its bound."]
    out = []
    for method in ordered_methods(nodes):
        rows = nodes[nodes["method"] == method]
        bound, name = own_bound(rows, method)
        if bound is None:
            out.append(f"{method}: its own bound ({name}) was not recorded in the per-node audit.")
        elif method.split("+")[-1] in exact_methods:
            out.append(_exact_sentence(method, rows, bound, name))
        else:
            out.append(_inexact_sentence(method, rows, bound, name))
    return out
