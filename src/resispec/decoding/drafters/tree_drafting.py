"""Level-by-level tree drafting shared by the model and EAGLE drafters."""

from __future__ import annotations

from collections.abc import Callable

import torch

from resispec.decoding.drafters.base import DraftTree, draw_children
from resispec.decoding.trees import Tree

__all__ = ["TreeLayout", "draft_levels"]


class TreeLayout:
    """Tensors derived from a tree on a device (ancestor matrix, depths, levels), cached per tree."""

    def __init__(self, tree: Tree, device: torch.device) -> None:
        self.tree = tree
        self.ancestors = tree.ancestor_matrix(device)  # [N, N] bool
        self.depths = torch.tensor(tree.depths, device=device)  # [N]
        self.levels = [torch.tensor(level, device=device) for level in tree.levels()]
        self.parents = torch.tensor(tree.parents, device=device).clamp(min=0)  # [N]
        counts = [len(kids) for kids in tree.children]
        self.branch_per_level = [max(counts[n] for n in level) for level in tree.levels()]


def draft_levels(
    layout: TreeLayout,
    root_token: int,
    root_probs: torch.Tensor,
    forward_level: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    *,
    draws: str,
    generator: torch.Generator,
) -> tuple[DraftTree, int]:
    """Expand the tree level by level.

    root_probs: [V] draft distribution at the root; ``forward_level(nodes [Q], tokens [Q]) -> probs [Q, V]``
    runs the drafter on one level (nodes in BFS order, all earlier levels already in its cache).
    Returns the draft and the number of forwarded nodes (root included: nodes ``0..F-1``).
    """
    tree = layout.tree
    n, vocab = tree.num_nodes, root_probs.shape[-1]
    device = root_probs.device
    tokens = torch.zeros(n, dtype=torch.long, device=device)
    tokens[0] = root_token
    valid = torch.ones(n, dtype=torch.bool, device=device)
    probs = torch.zeros(n, vocab, dtype=root_probs.dtype, device=device)  # [N, V]
    probs[0] = root_probs
    forwarded = 1
    for depth in range(1, tree.depth):
        parents = layout.levels[depth - 1]
        k = layout.branch_per_level[depth - 1]
        drawn, drawn_valid = draw_children(probs[parents], k, draws, generator)  # [P, k]
        for row, parent in enumerate(parents.tolist()):
            kids = tree.children[parent]
            if kids:
                tokens[list(kids)] = drawn[row, : len(kids)]
                valid[list(kids)] = drawn_valid[row, : len(kids)] & valid[parent]
        level = layout.levels[depth]
        if depth == tree.depth - 1:
            break
        probs[level] = forward_level(level, tokens[level])
        forwarded = int(level[-1]) + 1
    return DraftTree(tree=tree, tokens=tokens, draft_probs=probs, valid=valid), forwarded
