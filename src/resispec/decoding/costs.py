"""The cost profile of a (target, draft, device): seconds of the target's tree forward against the
number of tree nodes, of the drafter's proposal against the tree's shape, and of one verifier call.

Measured once per pair in the workflow (warmed up, median of repeats, on a held-out context), it lets
``resispec.decoding.auto_tree`` size trees for the hardware as Sequoia's hardware-aware optimiser does.
It times the engine that runs: the target's tree forward and the drafter's forwards with the run's
``compile_mode`` (compiled graphs built by the warm-up), the verifiers as the engine calls them
(``verify.batched.verify_rows`` in the run's ``verify_mode``), each clock read after a synchronisation.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch

from resispec.decoding.layout import tree_layout
from resispec.decoding.target import new_target, sync
from resispec.decoding.trees import Tree, chain, parse

NODE_GRID = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128)  # tree sizes timed on the target
# trees whose proposals are timed: depth (forward passes) and width vary independently
PROBE_TREES = (
    "chain1",
    "chain2",
    "chain3",
    "chain5",
    "chain7",
    "d2b2",
    "d2b4",
    "d2b8",
    "d3b2",
    "d3b4",
    "d4b2",
    "d4b3",
)


def draft_features(tree: Tree) -> list[float]:
    """Regressors of a proposal's cost: 1, level forwards, forwarded nodes, nodes drawn."""
    layout = tree_layout(tree, torch.device("cpu"))
    return [1.0, float(max(tree.depth - 2, 0)), float(layout.forwarded), float(tree.num_nodes - 1)]


@dataclass
class CostProfile:
    """Seconds per step of the target's tree forward (``target_seconds[i]`` for ``target_nodes[i]``
    nodes), of a proposal (a linear model over ``draft_features``) and of one verifier call."""

    target_nodes: list[int]
    target_seconds: list[float]
    draft_seconds_per_feature: list[float]
    verify_seconds: dict[str, float]

    def target_time(self, nodes: int) -> float:
        """Interpolated (linearly; extrapolated from the last two points beyond the grid)."""
        xs, ys = self.target_nodes, self.target_seconds
        if nodes <= xs[-1]:
            return float(np.interp(nodes, xs, ys))
        slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        return ys[-1] + slope * (nodes - xs[-1])

    def draft_time(self, tree: Tree) -> float:
        return max(float(np.dot(self.draft_seconds_per_feature, draft_features(tree))), 0.0)

    def to_dict(self) -> dict:
        return asdict(self)


def _median_seconds(fn, repeats: int, device: torch.device) -> float:
    fn()  # warm-up
    sync(device)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@torch.no_grad()
def target_seconds(
    model, prefix: torch.Tensor, nodes: list[int], repeats: int, compile_mode: str = "none"
) -> list[float]:
    """Median seconds of one verification forward (with the root's projection) over n tree nodes on top
    of ``prefix`` [P] (long, on the model's device), for each n of ``nodes``, with ``compile_mode``."""
    out = []
    root = torch.zeros(1, dtype=torch.long, device=prefix.device)
    for n in nodes:
        target = new_target(
            model,
            chain(n - 1),
            prefix.device,
            False,
            1.0,
            capacity=len(prefix) + n,
            compile_mode=compile_mode,
        )
        target.prefill(prefix)
        tokens = prefix[-n:] if n <= len(prefix) else prefix[-1:].repeat(n)  # [n]; values do not matter

        def forward(target=target, tokens=tokens):
            target.forward_tree(tokens)
            target.probs(root)  # the walk always needs the root's distribution
            target.cache.crop(len(prefix) - 1)

        out.append(_median_seconds(forward, repeats, prefix.device))
    return out


@torch.no_grad()
def proposal_seconds(
    drafter,
    context: torch.Tensor,
    tree: Tree,
    *,
    draws: str,
    repeats: int,
    features: torch.Tensor | None = None,
    compile_mode: str = "none",
) -> float:
    """Median seconds of a steady-state proposal of ``tree``: each repeat commits one more token of
    ``context`` [L] (long) after a rejected step, as decoding does. ``features``: the target's hidden
    states [L, H] for drafters that need them (EAGLE); ``compile_mode``: the drafter's forwards'."""
    prefix_len = len(context) - repeats - 2
    if prefix_len < 2:
        raise ValueError(f"context of {len(context)} tokens is too short for {repeats} repeats")
    drafter.configure(capacity=len(context) + tree.num_nodes, compile_mode=compile_mode)
    drafter.reset()
    drafter.update(context[:prefix_len], (), None if features is None else features[: prefix_len - 1])
    generator = torch.Generator(device=context.device).manual_seed(0)
    times, length = [], prefix_len
    for repeat in range(repeats + 1):
        start = time.perf_counter()
        drafter.propose(context[:length], tree, draws=draws, temperature=1.0, generator=generator)
        sync(context.device)
        if repeat:  # the first proposal forwards the whole prefix: warm-up
            times.append(time.perf_counter() - start)
        new_features = None if features is None else features[length - 1 : length]
        drafter.update(context[: length + 1], [], new_features)
        length += 1
    return statistics.median(times)


def fit_draft_model(trees: list[Tree], seconds: list[float]) -> list[float]:
    """Least-squares coefficients of the proposal cost over ``draft_features``."""
    design = np.array([draft_features(tree) for tree in trees])  # [T, 4]
    coefficients, *_ = np.linalg.lstsq(design, np.asarray(seconds), rcond=None)
    return [float(c) for c in coefficients]


def verifier_seconds(method: str, distributions, k: int, repeats: int, verify_mode: str = "path") -> float:
    """Median seconds per verified node of ``method`` with k candidates on measured (target, draft) rows,
    as the engine verifies them (``verify_rows``): one row per call in ``"path"`` mode (the walk's
    level-by-level calls), every row in one call in ``"tree"`` mode (the call's time over its rows)."""
    from resispec.decoding.drafters.base import draw_children
    from resispec.decoding.walk import per_node_optimal
    from resispec.verify import get_verifier
    from resispec.verify.batched import RowSettings, verify_rows

    verifier = get_verifier(method, validate=False)
    target_probs, draft_probs = distributions[0]
    device = target_probs.device
    generator = torch.Generator(device=device).manual_seed(0)
    rows = torch.arange(min(repeats, target_probs.shape[0]), device=device)
    candidates, valid = draw_children(draft_probs[rows], k, verifier.draws, generator)  # [R, k]
    # as the walks call it: the level-by-level walk lets a host planner plan node by node on a CPU
    settings = RowSettings(
        verifier.options, host_planning=verify_mode == "path" and per_node_optimal(torch.device(device))
    )
    batches = [rows] if verify_mode == "tree" else [rows[i : i + 1] for i in range(len(rows))]

    def call(batch):
        verify_rows(
            method,
            target_probs[batch],
            draft_probs[batch],
            candidates[batch],
            valid[batch],
            generator,
            settings,
        )

    call(batches[0])  # warm-up
    times = []
    for batch in batches:
        sync(device)
        start = time.perf_counter()
        call(batch)
        sync(device)
        times.append((time.perf_counter() - start) / len(batch))
    return statistics.median(times)


def probe_trees() -> list[Tree]:
    return [parse(spec) for spec in PROBE_TREES]
