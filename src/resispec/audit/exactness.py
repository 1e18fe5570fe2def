"""Exactness of logged tree nodes: the verifier's exact output law against the target.

A logged node (see `resispec.decoding.records.audit_entry`) keeps the union of the top tokens of target and
draft and the two remaining masses. The *lumped* audit (rows with scope "lumped") lumps the remainder
into one extra token, so every distribution is exact on that reduced vocabulary; the verifier's law is
computed there (float64), with KL / TV against the target (`resispec.audit.bounds`: certified bounds
when the history recursion pruned). Lumping changes what a history-dependent verifier does (ResiSpec's
budgeting and fill order see one token for the whole tail), so these rows are labelled lumped; the
full-vocabulary audit (`resispec.audit.full_vocab`, scope "full") is the reference. Each node's
acceptance is reported against alpha* (the bound for k i.i.d. candidates) and against ``bound``, the
bound of the method's own candidate law (``resispec.verify.acceptance_bound``: alpha*_wor for sequoia).
"""

from __future__ import annotations

import torch

from resispec.audit.bounds import law_bounds
from resispec.verify import acceptance_bound, alpha_star, evaluate
from resispec.verify.registry import names


def __getattr__(name: str):
    """``EXACTNESS_METHODS``: the registered methods with a law to audit (all but temperature 0's)."""
    if name == "EXACTNESS_METHODS":
        return names(temperature_zero=False)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


NODE_KEYS = (
    "step",
    "depth",
    "prompt_id",
    "position",
    "verified_nodes",
)  # where the node sits in its generation


def reduced_pair(node: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """(target_probs, draft_probs) [V'+1] float64: kept tokens plus one lumped remainder, normalised."""
    target = torch.tensor(node["target"] + [node["target_rest"]], dtype=torch.float64).clamp_min(0)
    draft = torch.tensor(node["draft"] + [node["draft_rest"]], dtype=torch.float64).clamp_min(0)
    return target / target.sum(), draft / draft.sum()


def node_exactness(method: str, node: dict, *, max_histories: int = 20000, eps: float = 1e-9) -> dict:
    """KL, TV, exact acceptance and alpha* of one node under `method`, on its lumped vocabulary."""
    target, draft = reduced_pair(node)
    return law_row(method, target, draft, len(node["candidates"]), max_histories=max_histories, eps=eps)


def law_row(
    method: str, target: torch.Tensor, draft: torch.Tensor, k: int, *, max_histories: int, eps: float
) -> dict:
    """KL, TV (certified intervals), acceptance and alpha* of `method` with k candidates on one (p, q) pair
    [V] float64, each summing to 1."""
    result = evaluate(method, target, draft, k, eps=eps, max_histories=max_histories)
    return law_summary(method, target, draft, k, result)


def law_summary(method: str, target: torch.Tensor, draft: torch.Tensor, k: int, result) -> dict:
    """The row of one node from the law of ``method`` computed there (a ``resispec.verify.LawResult``)."""
    # kl/tv: exact, or the certified lower ends when the recursion pruned (kl_upper/tv_upper: upper ends)
    bounds = law_bounds(target.numpy(), result.law.numpy(), result.err)
    return {
        "k": k,
        **bounds._asdict(),
        "acceptance": result.acceptance,
        "alpha_star": float(alpha_star(target, draft, k)),
        "bound": acceptance_bound(method, target, draft, k),  # the bound of this method's candidate law
        "law_err": result.err,
        "vocab": int(target.numel()),
    }


def exactness_rows(method: str, nodes: list[dict], **options) -> list[dict]:
    """One row per logged node with candidates (leaves emit from p directly and are exact)."""
    if method not in names(temperature_zero=False):
        return []
    rows = []
    for index, node in enumerate(nodes):
        if not node["candidates"]:
            continue
        extra = {key: node[key] for key in NODE_KEYS if key in node}
        rows.append({"node": index, "scope": "lumped", **extra, **node_exactness(method, node, **options)})
    return rows
