"""Level-by-level tree drafting shared by the model and EAGLE drafters."""

from __future__ import annotations

from collections.abc import Callable

import torch

from resispec.decoding.drafters.base import DraftTree, draw_children
from resispec.decoding.layout import TreeLayout

__all__ = ["draft_levels"]


def draft_levels(
    layout: TreeLayout,
    root_token: torch.Tensor,
    root_probs: torch.Tensor,
    forward_level: Callable[[int, torch.Tensor, torch.Tensor], torch.Tensor],
    *,
    draws: str,
    generator: torch.Generator,
) -> tuple[DraftTree, int]:
    """Expand the tree level by level.

    root_token: long [1] (device); root_probs: [V] draft distribution at the root;
    ``forward_level(depth, nodes [Q], tokens [Q]) -> probs [Q, V]`` runs the drafter on level ``depth``
    (nodes in BFS order, all earlier levels already in its cache).
    Returns the draft and the number of forwarded nodes (root included: nodes ``0..F-1``, every node
    above the last level); ``draft_probs`` holds their rows only ([F, V], no zero-filled leaf rows).
    """
    tree = layout.tree
    device = root_probs.device
    tokens = torch.empty(tree.num_nodes, dtype=torch.long, device=device)  # [N]; every node set below
    tokens[:1] = root_token
    valid = torch.ones(tree.num_nodes, dtype=torch.bool, device=device)  # [N]
    probs = root_probs.new_empty(layout.forwarded, root_probs.shape[-1])  # [F, V]: nodes above the last level
    probs[0] = root_probs
    for depth in range(1, tree.depth):
        first, stop = layout.level_bounds[depth - 1]
        k = layout.branch_per_level[depth - 1]
        drawn, drawn_valid = draw_children(probs[first:stop], k, draws, generator)  # [P, k]
        kids, rows, slots = layout.children_index[depth]  # [C] each
        tokens[kids] = drawn[rows, slots]
        valid[kids] = drawn_valid[rows, slots] & valid[layout.parents[kids]]
        if depth < tree.depth - 1:
            level_first, level_stop = layout.level_bounds[depth]
            level = layout.levels[depth]
            probs[level_first:level_stop] = forward_level(depth, level, tokens[level])
    return DraftTree(tree=tree, tokens=tokens, draft_probs=probs, valid=valid), layout.forwarded
