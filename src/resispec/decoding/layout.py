"""Tensors derived from a tree on a device, built once per (tree, device) and shared by the target's
verification forward and the drafters (an engine run reuses them for every prompt and step)."""

from __future__ import annotations

from functools import lru_cache

import torch

from resispec.decoding.static_cache import FixedMask
from resispec.decoding.tree_attention import PrefixMask
from resispec.decoding.trees import Tree

__all__ = ["TreeLayout", "tree_layout", "PROJECTION_ROWS"]

# Target rows the level-by-level walk projects in one product: on a CPU the [V, H] head is read once per
# product, so up to 16 rows cost about as much as one (docs/reproduction-notes.md, "Figures behind
# constants").
PROJECTION_ROWS = 16


class TreeLayout:
    """Ancestor matrix, depths, parents and levels of ``tree`` on ``device``.

    Nodes are in breadth-first order, so every level is a contiguous range of node ids
    (``level_bounds[d] = (first, last + 1)``); ``forwarded`` is the number of nodes above the last level
    (nodes ``0..forwarded-1``: the ones whose draft distribution is computed).
    """

    def __init__(self, tree: Tree, device: torch.device) -> None:
        self.tree = tree
        self.ancestors = tree.ancestor_matrix(device)  # [N, N] bool
        self.depths = torch.tensor(tree.depths, device=device)  # [N]
        self.levels = [torch.tensor(level, device=device) for level in tree.levels()]
        self.level_bounds = [(level[0], level[-1] + 1) for level in tree.levels()]
        self.parents = torch.tensor(tree.parents, device=device).clamp(min=0)  # [N]
        counts = [len(kids) for kids in tree.children]
        self.branch_per_level = [max(counts[n] for n in level) for level in tree.levels()]
        self.forwarded = self.level_bounds[-1][0] if tree.depth > 1 else 1
        self.children_index = [None] + [self._children_index(tree, d) for d in range(1, tree.depth)]
        width = max(tree.max_branch, 1)
        table = [list(kids) + [-1] * (width - len(kids)) for kids in tree.children]
        self.child_table = torch.tensor(table, dtype=torch.long, device=device)  # [N, max_branch], -1 pad
        self.sibling = torch.tensor(tree.sibling_index, dtype=torch.long, device=device)  # [N]
        self.projections = _projection_tables(tree, PROJECTION_ROWS, device)
        self._masks: dict[tuple[int, torch.dtype], PrefixMask] = {}
        self._fixed: dict[tuple[int, torch.dtype, int], FixedMask] = {}

    def fixed_mask(self, level: int | None, dtype: torch.dtype, capacity: int) -> FixedMask:
        """The (cached) fixed-width mask of a forward over a static cache of ``capacity`` slots: over every
        node (``level=None``, the target: tree keys are the N nodes) or over level ``level``'s nodes (the
        drafters: tree keys are the forwarded nodes 1..F-1, the root being the prefix's last token)."""
        key = (-1 if level is None else level, dtype, capacity)
        if key not in self._fixed:
            if level is None:
                part = self.ancestors
            else:
                part = self.ancestors[
                    self.level_bounds[level][0] : self.level_bounds[level][1], 1 : self.forwarded
                ]
            self._fixed[key] = FixedMask(part, capacity, dtype)
        return self._fixed[key]

    def mask(self, level: int | None, dtype: torch.dtype) -> PrefixMask:
        """The (cached) attention mask of a forward over level ``level``'s nodes on top of the prefix
        and the earlier drafted nodes (drafters), or over every node (``level=None``: the target)."""
        key = (-1 if level is None else level, dtype)
        if key not in self._masks:
            if level is None:
                queries, cached = (
                    torch.arange(self.tree.num_nodes, device=self.depths.device),
                    self.levels[0][:0],
                )
            else:
                first = self.level_bounds[level][0]
                queries, cached = self.levels[level], torch.arange(1, first, device=self.depths.device)
            self._masks[key] = PrefixMask(self.ancestors, queries, cached, dtype)
        return self._masks[key]

    def _children_index(self, tree: Tree, depth: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Nodes of level ``depth`` [C], their parent's row within the previous level [C] and their
        sibling position [C]: node ``kids[i]`` is the ``slots[i]``-th child drawn for row ``rows[i]``."""
        first, stop = self.level_bounds[depth]
        kids = list(range(first, stop))
        parent_first = self.level_bounds[depth - 1][0]
        rows = [tree.parents[kid] - parent_first for kid in kids]
        slots = [tree.sibling_index[kid] for kid in kids]
        device = self.depths.device
        return tuple(torch.tensor(v, dtype=torch.long, device=device) for v in (kids, rows, slots))


def _subtree(tree: Tree, node: int, levels: int) -> list[int]:
    """``node`` and its descendants down to ``levels - 1`` levels below it, breadth first."""
    out, frontier = [node], [node]
    for _ in range(levels - 1):
        frontier = [kid for parent in frontier for kid in tree.children[parent]]
        out += frontier
    return out


def _projection_tables(tree: Tree, rows: int, device) -> dict[int, torch.Tensor]:
    """When the level-by-level walk projects target rows: at level d (a key), the row of the node it
    stands on and of its descendants over the next levels, as many levels as keep every node's set within
    ``rows``; ``tables[d]`` [N, W] lists each level-d node's set (padded with the node itself)."""
    tables, level, by_level = {}, 0, tree.levels()
    while level < tree.depth:
        span = 1
        while (
            level + span < tree.depth
            and max(len(_subtree(tree, n, span + 1)) for n in by_level[level]) <= rows
        ):
            span += 1
        sets = {n: _subtree(tree, n, span) for n in by_level[level]}
        width = max(len(v) for v in sets.values())
        table = [sets.get(n, [n]) + [n] * (width - len(sets.get(n, [n]))) for n in range(tree.num_nodes)]
        tables[level] = torch.tensor(table, dtype=torch.long, device=device)
        level += span
    return tables


@lru_cache(maxsize=64)
def tree_layout(tree: Tree, device: torch.device) -> TreeLayout:
    """The (cached) layout of ``tree`` on ``device``."""
    return TreeLayout(tree, torch.device(device))
