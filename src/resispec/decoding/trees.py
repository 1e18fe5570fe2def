"""Draft-tree topologies as data.

A :class:`Tree` is a rooted, ordered tree stored as a parent array in breadth-first (level) order.
Node 0 is the root: the last committed token, whose target distribution is computed in the same
verification forward as the drafted nodes.  ``num_nodes`` (root included) is the number of tokens the
target verifies per step; a tree with ``depth`` levels (root included) drafts ``depth - 1`` levels and
commits at most ``depth`` tokens per step.  Children of a node are ordered: the i-th child is the i-th
candidate the verifier visits (its "sibling position").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import torch

__all__ = ["Tree", "complete", "chain", "from_paths", "parse"]

COMPLETE = re.compile(r"d(\d+)b(\d+)")  # dXbY: X levels counting the root, Y children per node
CHAIN = re.compile(r"chain(\d+)")  # chainN: N drafted tokens


@dataclass(frozen=True)
class Tree:
    """Rooted ordered tree; ``parents[0] == -1`` and nodes are in breadth-first order."""

    parents: tuple[int, ...]
    name: str = field(default="tree", compare=False)

    def __post_init__(self) -> None:
        if not self.parents or self.parents[0] != -1:
            raise ValueError(f"parents: node 0 must be the root with parent -1, got {self.parents[:1]}")
        for node, parent in enumerate(self.parents[1:], start=1):
            if not 0 <= parent < node:
                raise ValueError(f"parents: node {node} has parent {parent}; parents must precede children")
        depths = self.depths
        if any(depths[i] > depths[i + 1] for i in range(len(depths) - 1)):
            raise ValueError("parents: nodes must be in breadth-first (non-decreasing depth) order")

    @property
    def num_nodes(self) -> int:
        """Verification cost: nodes verified per step, root included."""
        return len(self.parents)

    @cached_property
    def depths(self) -> tuple[int, ...]:
        """Depth of each node (root 0)."""
        out: list[int] = []
        for parent in self.parents:
            out.append(0 if parent < 0 else out[parent] + 1)
        return tuple(out)

    @property
    def depth(self) -> int:
        """Number of levels, root included (maximum tokens committed per step)."""
        return max(self.depths) + 1

    @cached_property
    def children(self) -> tuple[tuple[int, ...], ...]:
        """Ordered children of each node."""
        kids: list[list[int]] = [[] for _ in self.parents]
        for node, parent in enumerate(self.parents[1:], start=1):
            kids[parent].append(node)
        return tuple(tuple(k) for k in kids)

    @cached_property
    def sibling_index(self) -> tuple[int, ...]:
        """Position of each node among its parent's children (root: 0)."""
        out = [0] * self.num_nodes
        for kids in self.children:
            for position, node in enumerate(kids):
                out[node] = position
        return tuple(out)

    @property
    def max_branch(self) -> int:
        return max(len(k) for k in self.children)

    def levels(self) -> list[list[int]]:
        """Node ids grouped by depth."""
        out: list[list[int]] = [[] for _ in range(self.depth)]
        for node, d in enumerate(self.depths):
            out[d].append(node)
        return out

    def ancestor_matrix(self, device: torch.device | str | None = None) -> torch.Tensor:
        """Bool [N, N]: ``m[i, j]`` is True when j is i itself or an ancestor of i."""
        n = self.num_nodes
        rows = [[False] * n for _ in range(n)]  # built in Python, then one tensor on `device`
        for node in range(n):
            if node > 0:
                rows[node] = list(rows[self.parents[node]])
            rows[node][node] = True
        return torch.tensor(rows, dtype=torch.bool, device=device)

    def path_to(self, node: int) -> list[int]:
        """Node ids from the root to ``node`` inclusive."""
        path = [node]
        while self.parents[path[-1]] >= 0:
            path.append(self.parents[path[-1]])
        return path[::-1]


def _from_children_counts(counts_by_node: Sequence[int], name: str) -> Tree:
    """Build a BFS tree where node i (BFS order) has ``counts_by_node[i]`` children."""
    parents = [-1]
    for node, count in enumerate(counts_by_node):
        if node >= len(parents):
            break
        parents.extend([node] * count)
    return Tree(tuple(parents), name=name)


def complete(depth: int, branch: int) -> Tree:
    """Complete tree with ``depth`` levels (root included) and ``branch`` children per internal node."""
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    if branch < 1:
        raise ValueError(f"branch must be >= 1, got {branch}")
    parents = [-1]
    level = [0]
    for _ in range(depth - 1):
        nxt = []
        for parent in level:
            for _ in range(branch):
                parents.append(parent)
                nxt.append(len(parents) - 1)
        level = nxt
    return Tree(tuple(parents), name=f"d{depth}b{branch}")


def chain(length: int) -> Tree:
    """A chain drafting ``length`` tokens (``num_nodes == length + 1``), i.e. ``complete(length + 1, 1)``."""
    if length < 0:
        raise ValueError(f"length must be >= 0, got {length}")
    return Tree(tuple(range(-1, length)), name=f"chain{length}")


def from_paths(paths: Sequence[Sequence[int]], name: str = "paths") -> Tree:
    """EAGLE-style tree from paths of sibling indices, e.g. ``[[0], [1], [0, 0]]``.

    Every prefix of a path must itself be listed (the root, ``[]``, is implicit), and the sibling
    indices under each node must be 0, 1, ..., n-1.
    """
    keys = {tuple(int(i) for i in path) for path in paths}
    keys.discard(())
    for key in keys:
        if any(i < 0 for i in key):
            raise ValueError(f"paths: negative sibling index in {list(key)}")
        if len(key) > 1 and key[:-1] not in keys:
            raise ValueError(f"paths: prefix {list(key[:-1])} of {list(key)} is missing")
        if key[-1] > 0 and key[:-1] + (key[-1] - 1,) not in keys:
            raise ValueError(f"paths: sibling {list(key[:-1]) + [key[-1] - 1]} of {list(key)} is missing")
    ordered = sorted(keys, key=lambda k: (len(k), k))
    index = {(): 0}
    parents = [-1]
    for key in ordered:
        index[key] = len(parents)
        parents.append(index[key[:-1]])
    return Tree(tuple(parents), name=name)


def parse(spec: str | Tree) -> Tree:
    """``"d4b2"`` -> complete(4, 2); ``"chain5"`` -> chain(5); a :class:`Tree` is returned as is."""
    if isinstance(spec, Tree):
        return spec
    text = str(spec).strip().lower()
    if m := COMPLETE.fullmatch(text):
        return complete(int(m.group(1)), int(m.group(2)))
    if m := CHAIN.fullmatch(text):
        return chain(int(m.group(1)))
    raise ValueError(f"tree spec {spec!r} not understood (expected 'd{{depth}}b{{branch}}' or 'chain{{n}}')")
