"""Robustness of the ResiSpec verdict to our reading of Algorithm 1: the exact law of every
(budget, order) variant of ``resispec`` (verify/resispec.py: BUDGETS x ORDERS) on audited nodes.

Per node and variant, on the node's lumped top-token vocabulary (as the lumped audit,
`resispec.audit.exactness`): KL(p || law) and TV with certified intervals (``kl`` .. ``kl_upper``),
the exact acceptance (a certified lower end when the recursion pruned: ``law_err`` is the missing mass)
and alpha*. ``variant_summary`` gives one row per variant: mean KL with its certified interval, the share
of nodes whose acceptance is certainly above alpha*, the largest excess.
"""

from __future__ import annotations

import itertools

import numpy as np

from resispec.audit.exactness import NODE_KEYS, law_summary, reduced_pair
from resispec.verify import evaluate
from resispec.verify.resispec import BUDGETS, ORDERS

VARIANTS = tuple(itertools.product(BUDGETS, ORDERS))  # (budget, order); ("local", "decreasing_q") as printed
PRINTED = ("local", "decreasing_q")
ABOVE_TOL = 1e-9  # acceptance above alpha* by more than float64 rounding of the laws
COLUMNS = (
    "variant",
    "budget",
    "order",
    "node",
    "prompt_id",
    "step",
    "depth",
    "position",
    "k",
    "vocab",
    "kl",
    "kl_upper",
    "tv",
    "tv_upper",
    "acceptance",
    "alpha_star",
    "law_err",
)


def spread(count: int, wanted: int) -> list[int]:
    """``wanted`` indices spread evenly over ``range(count)`` (all when fewer)."""
    if wanted >= count:
        return list(range(count))
    return sorted({int(i) for i in np.linspace(0, count - 1, wanted).round()})


def variant_rows(nodes: list[dict], wanted: int, *, max_histories: int, eps: float = 1e-9) -> list[dict]:
    """Rows for ``wanted`` of the audited resispec nodes with candidates (spread over the run), every
    variant each; ``node`` is the index in ``nodes``."""
    mine = [i for i, node in enumerate(nodes) if node["method"] == "resispec" and node["candidates"]]
    rows = []
    for index in (mine[i] for i in spread(len(mine), wanted)):
        node = nodes[index]
        target, draft = reduced_pair(node)
        k = len(node["candidates"])
        keys = {key: node[key] for key in NODE_KEYS if key in node}
        for budget, order in VARIANTS:
            result = evaluate(
                "resispec", target, draft, k, eps=eps, max_histories=max_histories, budget=budget, order=order
            )
            summary = law_summary("resispec", target, draft, k, result)
            rows.append(
                {
                    "variant": f"{budget}/{order}",
                    "budget": budget,
                    "order": order,
                    "node": index,
                    **keys,
                    **summary,
                }
            )
    return rows


def variant_summary(rows) -> list[dict]:
    """Per variant: nodes, mean KL and the mean of its certified upper end, nodes with infinite KL, the
    share of nodes whose acceptance is above alpha* (lower end > alpha* + 1e-9) and the largest excess
    (acceptance upper end - alpha*)."""
    import pandas as pd

    frame = pd.DataFrame(list(rows))
    out = []
    if frame.empty:
        return out
    for (budget, order), part in frame.groupby(["budget", "order"], sort=False):
        finite = part[np.isfinite(part["kl"]) & np.isfinite(part["kl_upper"])]
        excess = part["acceptance"] - part["alpha_star"]
        out.append(
            {
                "variant": f"{budget}/{order}",
                "printed": (budget, order) == PRINTED,
                "nodes": len(part),
                "kl": finite["kl"].mean(),
                "kl_upper": finite["kl_upper"].mean(),
                "kl_inf_nodes": int(len(part) - len(finite)),
                "tv": part["tv"].mean(),
                "share_above_alpha_star": float((excess > ABOVE_TOL).mean()),
                "max_excess": float((excess + part["law_err"]).max()),
            }
        )
    return out
