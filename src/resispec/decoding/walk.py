"""The verification walk of one step, on the device: from the root, each node's verifier either accepts
one of its candidate children (the walk descends into it) or rejects them all and draws the step's final
token.

Vocabulary (as in vLLM's rejection sampler): *accepted* tokens are drafted candidates the verifier
accepts; when a node rejects all its candidates, the step ends with a *residual* token drawn from the
verifier's residual distribution (vLLM: "recovered"); at a leaf (no candidates) the step ends with a
*bonus* token drawn from the target. A step commits its accepted tokens plus that final token.

Two walks (``verify_mode``), neither reads a device value on the host: ``"tree"`` verifies every node in
one batched call (``resispec.verify.batched``) and then follows the accepted children with gathers;
``"path"`` verifies, level by level, the node the walk stands on (after the walk stopped, the remaining
levels still run, on the stopped node, and are ignored: fixed work, no branch on device values). Both
end in one long tensor, ``StepDecision.payload``, that the engine copies to the host once per step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import torch

from resispec.decoding.drafters import DraftTree
from resispec.decoding.layout import TreeLayout
from resispec.decoding.records import audit_entry
from resispec.verify import get_method
from resispec.verify.batched import BatchOutcome, RowSettings, verify_rows
from resispec.verify.checks import check_pair
from resispec.verify.rows import NO_CANDIDATE

__all__ = [
    "PayloadLayout",
    "StepDecision",
    "WalkContext",
    "WalkResult",
    "walk_tree",
    "walk_path",
    "counts",
    "finish_audit",
]


@dataclass(frozen=True)
class PayloadLayout:
    """The named layout of a step's payload, long [2D] for a tree of depth D: the step's tokens [0, D)
    (accepted tokens, then the final token, then zeros), the accepted nodes [D, 2D-1) (root excluded,
    ``NO_CANDIDATE`` after the path) and the final node's number of valid candidates at 2D-1. Every
    reader (the engine's commit, ``counts``) slices it through these fields."""

    depth: int

    @property
    def tokens(self) -> slice:
        return slice(0, self.depth)

    @property
    def path(self) -> slice:
        return slice(self.depth, 2 * self.depth - 1)

    @property
    def final_k(self) -> int:
        return 2 * self.depth - 1

    def pack(self, tokens: torch.Tensor, path: torch.Tensor, final_k: torch.Tensor) -> torch.Tensor:
        """payload [2D] from tokens [D], path [D-1] and final_k [1]."""
        return torch.cat([tokens, path, final_k])


@dataclass
class StepDecision:
    """A step's decisions on the device: ``payload`` long [2D] (``PayloadLayout``); ``rows(i)`` gives the
    i-th visited node's (target_probs [V], draft_probs [V], candidates [k], accepted_index, token) for the
    audit."""

    payload: torch.Tensor
    fields: PayloadLayout
    levels: list = field(default_factory=list)  # path walk: per level (p [1, V], q [1, V], cands, valid)
    all_rows: tuple | None = None  # tree walk: (p [N, V], q [N, V], candidates [N, k], valid [N, k])

    @property
    def path(self) -> torch.Tensor:
        return self.payload[self.fields.path]

    @property
    def tokens(self) -> torch.Tensor:
        return self.payload[self.fields.tokens]


@dataclass
class WalkResult:
    """What the host learns from a step's payload: ``accepted_nodes`` (root excluded, path order),
    ``tokens`` (accepted tokens + the final token), ``final_kind`` ("residual" or "bonus") and the
    per-step counts of the records (see ``records.StepRecord``)."""

    accepted_nodes: list[int]
    tokens: list[int]
    final_kind: str
    position_tried: list[int]
    position_accepted: list[int]
    depth_tried: list[int]
    depth_accepted: list[int]
    audit: list[Callable[[], dict]] = field(default_factory=list)  # pending entries (``finish_audit``)


@dataclass(frozen=True)
class WalkContext:
    """What a step's walk needs besides the step's draft, fixed for a whole generation: the tree's
    ``layout``, the ``target`` (its rows of the step's tree forward), the verifier's batched-call
    ``settings`` (``RowSettings``: method options, the timer's shaping tick, host planning), its
    ``method`` name, the ``walk`` (``walk_tree`` or ``walk_path``, by the run's ``verify_mode``), the
    ``generator``, the phase ``timer``, whether the audit keeps the rows (``audit``) and whether the rows
    are checked (``validate``, host reads; off by default)."""

    layout: TreeLayout
    target: object
    method: str
    settings: RowSettings
    walk: Callable[[WalkContext, DraftTree], StepDecision]
    generator: torch.Generator | None
    timer: object
    audit: bool = False
    validate: bool = False

    @classmethod
    def build(cls, target, verifier, verify_mode: str, generator, timer, *, audit: bool) -> WalkContext:
        """The context of ``verifier`` (a ``get_verifier`` object: method, options, validate) over
        ``target``'s layout. A method with a host planner plans node by node in the level-by-level walk
        on a CPU (``per_node_optimal``): a property of the method and the device, not of the call."""
        layout = target.layout
        walk = walk_tree if verify_mode == "tree" else walk_path
        host_planning = (
            walk is walk_path
            and per_node_optimal(layout.depths.device)
            and get_method(verifier.method).host_planner
        )
        settings = RowSettings(verifier.options, timer.shaping, host_planning)
        return cls(
            layout, target, verifier.method, settings, walk, generator, timer, audit, verifier.validate
        )

    @property
    def fields(self) -> PayloadLayout:
        return PayloadLayout(self.layout.tree.depth)

    def verify(self, target_rows, draft_rows, candidates, valid, *, settings=None) -> BatchOutcome:
        """``verify_rows`` of the context's method (its ``settings`` unless others are given); the rows'
        checks first when ``validate``."""
        if self.validate:
            check_pair(target_rows, draft_rows, batched=True)
        settings = self.settings if settings is None else settings
        return verify_rows(self.method, target_rows, draft_rows, candidates, valid, self.generator, settings)


class _Descent:
    """The walk's position from the root: the node it stands on [1], whether every node so far accepted
    a candidate (``alive`` [1]) and the accepted nodes [D-1] (``NO_CANDIDATE`` after the path)."""

    def __init__(self, depth: int, device: torch.device) -> None:
        self.node = torch.zeros(1, dtype=torch.long, device=device)
        self.alive = torch.ones(1, dtype=torch.bool, device=device)
        self.path = torch.full((depth - 1,), NO_CANDIDATE, dtype=torch.long, device=device)

    def follow(self, level: int, kids: torch.Tensor, accepted_index: torch.Tensor) -> None:
        """Descend into the accepted child: ``kids`` [1, k] are the current node's children,
        ``accepted_index`` [1] the candidate its verifier accepted (``NO_CANDIDATE``: none)."""
        accepted = self.alive & (accepted_index >= 0)
        chosen = kids.gather(1, accepted_index.clamp_min(0)[:, None])[:, 0]
        self.path[level : level + 1] = torch.where(accepted, chosen, NO_CANDIDATE)
        self.node = torch.where(accepted, chosen, self.node)
        self.alive = accepted


def _outcome_tokens(context: WalkContext, draft: DraftTree, path, final_token, final_k) -> torch.Tensor:
    """payload [2D] from path [D-1] (``NO_CANDIDATE`` pad), final token [1] and the final node's k [1]."""
    depth = context.layout.tree.depth
    index = torch.arange(depth, device=path.device)
    accepted = (path >= 0).sum()
    path_tokens = torch.cat([draft.tokens[path.clamp_min(0)], final_token])  # [D]
    tokens = torch.where(index < accepted, path_tokens, torch.where(index == accepted, final_token, 0))
    return context.fields.pack(tokens, path, final_k)


def _children(layout: TreeLayout, draft: DraftTree, nodes: torch.Tensor, k: int):
    """Candidates of ``nodes`` [B]: child node ids [B, k] (-1 pad), tokens [B, k], valid [B, k]."""
    kids = layout.child_table.index_select(0, nodes)[:, :k]
    safe = kids.clamp_min(0)
    return kids, draft.tokens[safe], (kids >= 0) & draft.valid[safe]


def per_node_optimal(device: torch.device) -> bool:
    """Whether the level-by-level walk lets a method with a host planner (``Method.host_planner``:
    optimal) plan node by node: on a CPU, where its host reads of sizes block nothing (the tensors are
    host memory) and it is faster than the fixed-shape batched plan for one row (measured in
    docs/reproduction-notes.md); on an accelerator the batched plan, so that the step keeps its one
    synchronisation."""
    return device.type == "cpu"


def walk_path(context: WalkContext, draft: DraftTree) -> StepDecision:
    """Level-by-level walk: one projected target row and one verifier row per level."""
    layout, timer = context.layout, context.timer
    depth = layout.tree.depth
    descent = _Descent(depth, draft.tokens.device)
    final_token, final_k = torch.zeros_like(descent.node), torch.zeros_like(descent.node)
    decision = StepDecision(None, context.fields)
    for level in range(depth):
        target_row = context.target.row(descent.node, level)  # [1, V]
        timer.lap("target")
        k = layout.branch_per_level[level] if level < depth - 1 else 0
        kids, candidates, valid = _children(layout, draft, descent.node, k)
        draft_row = draft.draft_probs.index_select(0, descent.node) if k else target_row
        out = context.verify(target_row, draft_row, candidates, valid)
        stop = descent.alive & (out.accepted_index < 0)
        final_token = torch.where(stop, out.token, final_token)
        final_k = torch.where(stop, valid.sum(-1), final_k)
        if k:
            descent.follow(level, kids, out.accepted_index)
        if context.audit:
            decision.levels.append((target_row[0], draft_row[0], candidates[0], valid[0]))
        timer.lap("verify")
        if context.settings.host_planning and not bool(descent.alive):  # a CPU read: stop planning
            break
    decision.payload = _outcome_tokens(context, draft, descent.path, final_token, final_k)
    return decision


def walk_tree(context: WalkContext, draft: DraftTree) -> StepDecision:
    """Whole-tree walk: every node verified in one batched call, then the accepted children followed."""
    layout, timer = context.layout, context.timer
    target_rows = context.target.probs(None)  # [N, V]
    timer.lap("target")
    forwarded = draft.draft_probs.shape[0]  # F: nodes above the last level (the rest are leaves)
    draft_rows = torch.cat([draft.draft_probs, target_rows[forwarded:]])  # leaves: rows unused (k = 0)
    nodes = torch.arange(layout.tree.num_nodes, device=draft.tokens.device)
    kids, candidates, valid = _children(layout, draft, nodes, layout.child_table.shape[1])
    inner = context.verify(
        target_rows[:forwarded], draft.draft_probs, candidates[:forwarded], valid[:forwarded]
    )
    leaves = context.verify(  # bonus tokens
        target_rows[forwarded:],
        target_rows[forwarded:],
        candidates[forwarded:, :0],
        valid[forwarded:, :0],
        settings=RowSettings(),
    )
    out = BatchOutcome(*(torch.cat(parts) for parts in zip(inner, leaves, strict=True)))
    descent = _Descent(layout.tree.depth, draft.tokens.device)
    for level in range(layout.tree.depth - 1):
        descent.follow(
            level, kids.index_select(0, descent.node), out.accepted_index.index_select(0, descent.node)
        )
    node = descent.node
    final_k = valid.index_select(0, node).sum(-1)
    decision = StepDecision(None, context.fields)
    decision.payload = _outcome_tokens(context, draft, descent.path, out.token.index_select(0, node), final_k)
    if context.audit:
        decision.all_rows = (target_rows, draft_rows, candidates, valid)
    timer.lap("verify")
    return decision


def counts(
    layout: TreeLayout, payload: list[int], decision: StepDecision, audit_top: int | None
) -> WalkResult:
    """The host-side result of a step from its payload (already copied to the host)."""
    tree, depth, fields = layout.tree, layout.tree.depth, decision.fields
    path = [n for n in payload[fields.path] if n >= 0]
    final_k = payload[fields.final_k]
    tokens = payload[fields.tokens][: len(path) + 1]
    zeros = [0] * tree.max_branch
    result = WalkResult(
        path,
        tokens,
        "residual" if final_k else "bonus",
        list(zeros),
        list(zeros),
        [0] * (depth - 1),
        [0] * (depth - 1),
    )
    visited = [0, *path]
    for i, node in enumerate(visited):
        accepted_index = tree.sibling_index[visited[i + 1]] if i < len(path) else None
        tried = final_k if accepted_index is None else accepted_index + 1
        if tried:
            result.depth_tried[tree.depths[node]] += 1
            for position in range(tried):
                result.position_tried[position] += 1
        if accepted_index is not None:
            result.position_accepted[accepted_index] += 1
            result.depth_accepted[tree.depths[node]] += 1
        if audit_top:
            result.audit.append(_pending_audit(decision, i, node, accepted_index, tokens[i], audit_top, tree))
    return result


def _pending_audit(
    decision: StepDecision, level: int, node: int, accepted_index, token: int, top: int, tree
) -> Callable[[], dict]:
    """The audit entry of the ``level``-th visited node, built later (``finish_audit``): in the step, only
    copies of the node's rows are kept (a row of the tree walk's [N, V] rows, or the path walk's level);
    the entry's top-k, slicing and host conversions run after the generation is timed."""
    if decision.all_rows is not None:
        rows = tuple(part[node] for part in decision.all_rows)
    else:
        rows = decision.levels[level]
    target_row, draft_row, cands, valid = (part.clone() for part in rows)  # a step's buffers may be reused
    extra = {"node": node, "depth": tree.depths[node], "accepted_index": accepted_index, "token": int(token)}
    return partial(_audit_entry, target_row, draft_row, cands, valid, top, **extra)


def _audit_entry(target_row, draft_row, cands, valid, top: int, **extra) -> dict:
    cands = cands[: int(valid.sum())]
    if not len(cands):  # a leaf, or no child could be drawn: the draft row is not used
        draft_row = target_row
    return audit_entry(target_row, draft_row, cands, top, **extra)


def finish_audit(steps) -> None:
    """Build the audit entries ``counts`` left pending in each step's record (``StepRecord.audit``)."""
    for step in steps:
        step.audit = [entry() for entry in step.audit]
