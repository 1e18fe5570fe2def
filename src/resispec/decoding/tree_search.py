"""Sequoia's tree search (Chen et al. 2024; `tree_search.py` of Infini-AI-Lab/Sequoia): the dynamic
program over trees that maximises expected committed tokens per step for a positional acceptance vector,
for every node count and depth at once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from resispec.decoding.trees import Tree

__all__ = ["SequoiaTables", "acceptance_rows", "sequoia", "sequoia_tables", "sequoia_tree"]


def _maxplus(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """out[m] = max_{j>=1} left[m - j] + right[j]; returns (values, argmax j)."""
    n = len(left)
    total = np.full((n, n), -np.inf)  # [m, j]
    for j in range(1, n):
        total[j:, j] = left[: n - j] + right[j]
    return total.max(axis=1), total.argmax(axis=1)


class SequoiaTables(NamedTuple):
    """The dynamic program's tables: ``values[level][n]`` is the best expected committed tokens of a tree
    with exactly n nodes and at most level + 1 levels (-inf where none exists); ``choices`` rebuild it."""

    values: list[np.ndarray]
    choices: list


def acceptance_rows(acceptance) -> np.ndarray:
    """Acceptance as rows [K, K]: row c-1 holds the positional vector of a node with c children.

    A vector u [K] (a verifier whose i-th decision ignores how many candidates follow, e.g. specinfer or
    sequoia) gives rows ``u[:c]``; a matrix is taken as it is (e.g. ers, whose plan depends on k).
    """
    acc = np.asarray(acceptance, dtype=float)
    if acc.ndim == 1 and len(acc):
        acc = np.tril(np.broadcast_to(acc, (len(acc), len(acc))))
    if acc.ndim != 2 or acc.shape[0] != acc.shape[1] or not len(acc) or np.any(acc < 0) or np.any(acc > 1):
        raise ValueError(
            f"acceptance must be a non-empty vector or square matrix in [0, 1], got {acceptance}"
        )
    if np.any(np.triu(acc, 1) != 0):
        raise ValueError("acceptance rows: row c-1 may only hold positions 0..c-1")
    return acc


def _check_sequoia(budget: int, max_depth: int | None) -> int:
    if budget < 1:
        raise ValueError(f"budget must be >= 1, got {budget}")
    max_depth = budget if max_depth is None else max_depth
    if max_depth < 1:
        raise ValueError(f"max_depth must be >= 1, got {max_depth}")
    return max_depth


def _children_values(rows: np.ndarray, best: np.ndarray) -> tuple[np.ndarray, np.ndarray, list]:
    """Best 1 + sum of weighted child subtrees for each node count, over child counts c (0 = leaf):
    (value [size], child count [size], splits[c-1][position] [size])."""
    size = len(best)
    value, kids, splits = np.full(size, -np.inf), np.zeros(size, dtype=int), []
    finite = np.isfinite(best)
    for count in range(1, rows.shape[0] + 1):
        knap = np.full(size, -np.inf)
        knap[0] = 0.0
        count_splits = []
        for position in range(count):
            scaled = np.full(size, -np.inf)
            scaled[finite] = rows[count - 1, position] * best[finite]  # subtree weighted by its position
            knap, arg = _maxplus(knap, scaled)
            count_splits.append(arg)
        splits.append(count_splits)
        improve = np.full(size, -np.inf)
        improve[1:] = 1.0 + knap[:-1]
        better = improve > value + 1e-12
        value, kids = np.where(better, improve, value), np.where(better, count, kids)
    return value, kids, splits


def sequoia_tables(acceptance, budget: int, max_depth: int | None = None) -> SequoiaTables:
    """Sequoia's dynamic program for every node count up to ``budget`` and depth up to ``max_depth``.

    ``acceptance[i]`` is the probability that the (i+1)-th sibling candidate is the accepted one, over
    all nodes that verify candidates (unconditional, as Sequoia measures it); or a matrix of such
    vectors, one per child count (``acceptance_rows``). A tree's value is its expected committed tokens
    per step: the sum over nodes of the product of the acceptances of the sibling positions on the
    node's path (root counts 1).
    """
    rows, max_depth = acceptance_rows(acceptance), _check_sequoia(budget, max_depth)
    best = np.full(budget + 1, -np.inf)  # best[n]: best tree of exactly n nodes with the levels so far
    best[1] = 1.0
    values, choices = [best.copy()], [None]
    for _ in range(1, max_depth):
        value, kids, splits = _children_values(rows, best)
        better = value > best + 1e-12
        choices.append((np.where(better, kids, 0), splits))
        best = np.where(better, value, best)
        values.append(best.copy())
    return SequoiaTables(values, choices)


def sequoia_tree(tables: SequoiaTables, nodes: int, levels: int, name: str | None = None) -> Tree:
    """The best tree of exactly ``nodes`` nodes with at most ``levels`` levels (root included)."""
    if not 1 <= levels <= len(tables.values) or not np.isfinite(tables.values[levels - 1][nodes]):
        raise ValueError(f"no tree of {nodes} nodes with at most {levels} levels in these tables")
    structure = _rebuild(tables.choices, levels - 1, nodes)
    return _nested_to_tree(structure, name=name or f"sequoia{nodes}x{levels}")


def sequoia(acceptance: Sequence[float], budget: int, max_depth: int | None = None) -> Tree:
    """Sequoia's tree for an acceptance vector (see ``sequoia_tables``): the best tree with at most
    ``budget`` nodes (root included) and at most ``max_depth`` levels (root included)."""
    tables = sequoia_tables(acceptance, budget, max_depth)
    levels = len(tables.values)
    n_best = int(np.argmax(tables.values[-1]))  # smallest tree reaching the best value
    return sequoia_tree(tables, n_best, levels, name=f"sequoia{budget}")


def _rebuild(tables: list, level: int, n: int) -> list:
    """Nested children lists of the best tree with n nodes using tables up to ``level``."""
    if n == 1 or level == 0:
        return []
    kids, splits = tables[level]
    count = int(kids[n])
    if count == 0:
        return _rebuild(tables, level - 1, n) if level > 1 else []
    sizes, remaining = [], n - 1
    for position in range(count - 1, -1, -1):
        j = int(splits[count - 1][position][remaining])
        sizes.append(j)
        remaining -= j
    return [_rebuild(tables, level - 1, j) for j in reversed(sizes)]


def _nested_to_tree(structure: list, name: str) -> Tree:
    parents = [-1]
    queue = [(0, structure)]
    while queue:
        node, kids = queue.pop(0)
        for sub in kids:
            parents.append(node)
            queue.append((len(parents) - 1, sub))
    return Tree(tuple(parents), name=name)
