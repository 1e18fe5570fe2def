"""Tree ``auto``: the tree that maximises expected committed tokens per second for a pair on its
hardware, as Sequoia's hardware-aware optimiser chooses it (Chen et al. 2024, `tree_search.py` of
Infini-AI-Lab/Sequoia: best (budget, depth) by (depth x draft time + target time) / accepted length).

Candidates are Sequoia's dynamic-programming trees (``resispec.decoding.tree_search.sequoia_tables``) of every
node count up to ``max_nodes`` and depth up to ``max_depth``; each is scored with the measured cost
profile: target forward over its nodes + the proposal of its shape + one verifier call per visited node.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from resispec.decoding.costs import CostProfile
from resispec.decoding.tree_search import sequoia_tables, sequoia_tree
from resispec.decoding.trees import Tree


@dataclass(frozen=True)
class AutoTree:
    tree: Tree
    expected_tokens: float  # committed tokens per step under the positional acceptance assumption
    step_seconds: float  # predicted seconds per step
    method: str

    @property
    def tokens_per_second(self) -> float:
        return self.expected_tokens / self.step_seconds

    def describe(self) -> dict:
        return {
            "method": self.method,
            "nodes": self.tree.num_nodes,
            "levels": self.tree.depth,
            "parents": list(self.tree.parents),
            "expected_tokens": self.expected_tokens,
            "step_seconds": self.step_seconds,
            "tokens_per_second": self.tokens_per_second,
        }


def choose_tree(
    acceptance: list[float], costs: CostProfile, method: str, *, max_nodes: int, max_depth: int
) -> AutoTree:
    """The best Sequoia tree for the positional acceptance vector ``acceptance`` (see
    ``resispec.decoding.profile``) of ``method`` under ``costs``; ties go to the smaller tree."""
    if max_nodes < 1 or max_depth < 1:
        raise ValueError(f"max_nodes and max_depth must be >= 1, got {max_nodes}, {max_depth}")
    tables = sequoia_tables(acceptance, max_nodes, max_depth)
    verify = costs.verify_seconds.get(method, 0.0)
    best = None
    for levels, values in enumerate(tables.values, start=1):
        for nodes in np.flatnonzero(np.isfinite(values)):
            tree = sequoia_tree(tables, int(nodes), levels, name="auto")
            expected = float(values[nodes])
            seconds = costs.target_time(tree.num_nodes) + costs.draft_time(tree) + verify * expected
            candidate = AutoTree(tree, expected, seconds, method)
            if best is None or candidate.tokens_per_second > best.tokens_per_second * (1 + 1e-9):
                best = candidate
    return best
