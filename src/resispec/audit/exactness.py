"""Exactness of logged tree nodes: the verifier's exact output law against the target.

A logged node (see `resispec.decoding.records.audit_entry`) keeps the union of the top tokens of target and
draft and the two remaining masses. The audit lumps the remainder into one extra token, so every
distribution is exact on that reduced vocabulary; the verifier's law is computed there (float64),
and KL / TV against the target use scipy. Each node's acceptance is reported against alpha* (the bound
for k i.i.d. candidates) and against ``bound``, the bound of the method's own candidate law
(``resispec.verify.acceptance_bound``: alpha*_wor for sequoia).
"""

from __future__ import annotations

import numpy as np
import torch

from resispec.audit.statistics import kl_divergence, total_variation
from resispec.verify import acceptance_bound, alpha_star, evaluate

EXACTNESS_METHODS = ("specinfer", "sequoia", "ers", "resispec", "optimal", "deterministic")


def reduced_pair(node: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """(target_probs, draft_probs) [V'+1] float64: kept tokens plus one lumped remainder, normalised."""
    target = torch.tensor(node["target"] + [node["target_rest"]], dtype=torch.float64).clamp_min(0)
    draft = torch.tensor(node["draft"] + [node["draft_rest"]], dtype=torch.float64).clamp_min(0)
    return target / target.sum(), draft / draft.sum()


def node_exactness(method: str, node: dict, *, max_histories: int = 20000, eps: float = 1e-9) -> dict:
    """KL, TV, exact acceptance and alpha* of one node under `method`."""
    target, draft = reduced_pair(node)
    k = len(node["candidates"])
    result = evaluate(method, target, draft, k, eps=eps, max_histories=max_histories)
    law = result.law.numpy()
    target_np = target.numpy()
    # A pruned recursion returns a sub-probability law short of `err` (law <= true law entrywise), so
    # sum_v max(0, law - p) is a certified lower bound of the true TV, and 2 TV^2 (Pinsker) of the KL.
    tv_lower = float(np.clip(law - target_np, 0.0, None).sum())
    kl = kl_divergence(target_np, law / law.sum()) if result.err > 0 else kl_divergence(target_np, law)
    return {
        "k": k,
        "kl": kl,
        "tv": total_variation(target_np, law),
        "tv_lower": tv_lower,
        "kl_lower": kl if result.err == 0 else 2.0 * tv_lower**2,
        "acceptance": result.acceptance,
        "alpha_star": float(alpha_star(target, draft, k)),
        "bound": acceptance_bound(method, target, draft, k),  # the bound of this method's candidate law
        "law_err": result.err,
        "vocab": int(target.numel()),
    }


def exactness_rows(method: str, nodes: list[dict], **options) -> list[dict]:
    """One row per logged node with candidates (leaves emit from p directly and are exact)."""
    if method not in EXACTNESS_METHODS:
        return []
    rows = []
    for index, node in enumerate(nodes):
        if not node["candidates"]:
            continue
        extra = {key: node[key] for key in ("step", "depth", "prompt_id") if key in node}
        rows.append({"node": index, **extra, **node_exactness(method, node, **options)})
    return rows
