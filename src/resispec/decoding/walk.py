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

from dataclasses import dataclass, field

import torch

from resispec.decoding.drafters import DraftTree
from resispec.decoding.layout import TreeLayout
from resispec.decoding.records import audit_entry
from resispec.verify import get_method
from resispec.verify.batched import BatchOutcome, verify_rows
from resispec.verify.checks import check_pair

__all__ = ["StepDecision", "WalkResult", "walk_tree", "walk_path", "counts"]


@dataclass
class StepDecision:
    """A step's decisions on the device: ``payload`` long [2D] = the step's tokens [D] (accepted tokens,
    then the final token, then zeros), the accepted nodes [D-1] (root excluded, -1 after the path) and
    the final node's number of valid candidates [1]; ``rows(i)`` gives the i-th visited node's
    (target_probs [V], draft_probs [V], candidates [k], accepted_index, token) for the audit."""

    payload: torch.Tensor
    depth: int
    levels: list = field(default_factory=list)  # path walk: per level (p [1, V], q [1, V], cands, valid)
    all_rows: tuple | None = None  # tree walk: (p [N, V], q [N, V], candidates [N, k], valid [N, k])

    @property
    def path(self) -> torch.Tensor:
        return self.payload[self.depth : 2 * self.depth - 1]


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
    audit: list[dict] = field(default_factory=list)


def _outcome_tokens(layout: TreeLayout, draft: DraftTree, path, final_token, final_k) -> torch.Tensor:
    """payload [2D] from path [D-1] (-1 pad), final token [1] and the final node's k [1]."""
    depth = layout.tree.depth
    index = torch.arange(depth, device=path.device)
    accepted = (path >= 0).sum()
    path_tokens = torch.cat([draft.tokens[path.clamp_min(0)], final_token])  # [D]
    tokens = torch.where(index < accepted, path_tokens, torch.where(index == accepted, final_token, 0))
    return torch.cat([tokens, path, final_k])


def _children(layout: TreeLayout, draft: DraftTree, nodes: torch.Tensor, k: int):
    """Candidates of ``nodes`` [B]: child node ids [B, k] (-1 pad), tokens [B, k], valid [B, k]."""
    kids = layout.child_table.index_select(0, nodes)[:, :k]
    safe = kids.clamp_min(0)
    return kids, draft.tokens[safe], (kids >= 0) & draft.valid[safe]


def _checked(validate: bool, target_rows: torch.Tensor, draft_rows: torch.Tensor) -> None:
    """``verifier_options={"validate": True}``: the rows' checks (host reads; off by default)."""
    if validate:
        check_pair(target_rows, draft_rows, batched=True)


def per_node_optimal(device: torch.device) -> bool:
    """Whether the level-by-level walk lets a method with a host planner (``Method.host_planner``:
    optimal) plan node by node: on a CPU, where its host reads of sizes block nothing (the tensors are
    host memory) and it is much faster than the fixed-shape batched plan for one row (measured in
    docs/reproduction-notes.md); on an accelerator the batched plan, so that the step keeps its one
    synchronisation."""
    return device.type == "cpu"


def walk_path(
    layout: TreeLayout,
    draft: DraftTree,
    target,
    method,
    options,
    generator,
    timer,
    audit=False,
    validate=False,
):
    """Level-by-level walk: one projected target row and one verifier row per level."""
    depth, device = layout.tree.depth, draft.tokens.device
    node = torch.zeros(1, dtype=torch.long, device=device)
    alive = torch.ones(1, dtype=torch.bool, device=device)
    path = torch.full((depth - 1,), -1, dtype=torch.long, device=device)
    final_token, final_k = torch.zeros_like(node), torch.zeros_like(node)
    decision = StepDecision(path, depth)
    per_node = per_node_optimal(device) and get_method(method).host_planner
    for level in range(depth):
        target_row = target.row(node, level)  # [1, V]
        timer.lap("target")
        k = layout.branch_per_level[level] if level < depth - 1 else 0
        kids, candidates, valid = _children(layout, draft, node, k)
        draft_row = draft.draft_probs.index_select(0, node) if k else target_row
        _checked(validate, target_row, draft_row)
        out = verify_rows(
            method,
            target_row,
            draft_row,
            candidates,
            valid,
            generator,
            options=options,
            tick=timer.shaping,
            per_node_optimal=per_node,
        )
        accepted = alive & (out.accepted_index >= 0)
        stop = alive & ~accepted
        final_token = torch.where(stop, out.token, final_token)
        final_k = torch.where(stop, valid.sum(-1), final_k)
        if k:
            chosen = kids.gather(1, out.accepted_index.clamp_min(0)[:, None])[:, 0]
            path[level : level + 1] = torch.where(accepted, chosen, -1)
            node = torch.where(accepted, chosen, node)
        alive = accepted
        if audit:
            decision.levels.append((target_row[0], draft_row[0], candidates[0], valid[0]))
        timer.lap("verify")
        if per_node and not bool(alive):  # a CPU read: stop planning
            break
    decision.payload = _outcome_tokens(layout, draft, path, final_token, final_k)
    return decision


def walk_tree(
    layout: TreeLayout,
    draft: DraftTree,
    target,
    method,
    options,
    generator,
    timer,
    audit=False,
    validate=False,
):
    """Whole-tree walk: every node verified in one batched call, then the accepted children followed."""
    depth, device = layout.tree.depth, draft.tokens.device
    target_rows = target.probs(None)  # [N, V]
    timer.lap("target")
    forwarded = draft.draft_probs.shape[0]  # F: nodes above the last level (the rest are leaves)
    draft_rows = torch.cat([draft.draft_probs, target_rows[forwarded:]])  # leaves: rows unused (k = 0)
    _checked(validate, target_rows, draft_rows)
    nodes = torch.arange(layout.tree.num_nodes, device=device)
    kids, candidates, valid = _children(layout, draft, nodes, layout.child_table.shape[1])
    inner = verify_rows(
        method,
        target_rows[:forwarded],
        draft.draft_probs,
        candidates[:forwarded],
        valid[:forwarded],
        generator,
        options=options,
        tick=timer.shaping,
    )
    leaves = verify_rows(
        method,
        target_rows[forwarded:],
        target_rows[forwarded:],
        candidates[forwarded:, :0],
        valid[forwarded:, :0],
        generator,
    )  # bonus tokens
    out = BatchOutcome(*(torch.cat(parts) for parts in zip(inner, leaves, strict=True)))
    node = torch.zeros(1, dtype=torch.long, device=device)
    alive = torch.ones(1, dtype=torch.bool, device=device)
    path = torch.full((depth - 1,), -1, dtype=torch.long, device=device)
    for level in range(depth - 1):
        index = out.accepted_index.index_select(0, node)  # [1]
        accepted = alive & (index >= 0)
        chosen = kids.index_select(0, node).gather(1, index.clamp_min(0)[:, None])[:, 0]
        path[level : level + 1] = torch.where(accepted, chosen, -1)
        node, alive = torch.where(accepted, chosen, node), accepted
    final_k = valid.index_select(0, node).sum(-1)
    decision = StepDecision(None, depth)
    decision.payload = _outcome_tokens(layout, draft, path, out.token.index_select(0, node), final_k)
    if audit:
        decision.all_rows = (target_rows, draft_rows, candidates, valid)
    timer.lap("verify")
    return decision


def counts(
    layout: TreeLayout, payload: list[int], decision: StepDecision, audit_top: int | None
) -> WalkResult:
    """The host-side result of a step from its payload (already copied to the host)."""
    tree, depth = layout.tree, layout.tree.depth
    path = [n for n in payload[depth : 2 * depth - 1] if n >= 0]
    final_k = payload[-1]
    tokens = payload[: len(path) + 1]
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
            result.audit.append(_audit(decision, i, node, accepted_index, tokens[i], audit_top, tree))
    return result


def _audit(decision: StepDecision, level: int, node: int, accepted_index, token: int, top: int, tree) -> dict:
    """The audit entry of the ``level``-th visited node (after the step's sync: host reads are fine)."""
    if decision.all_rows is not None:
        target_rows, draft_rows, candidates, valid = decision.all_rows
        target_row, draft_row, cands, ok = target_rows[node], draft_rows[node], candidates[node], valid[node]
    else:
        target_row, draft_row, cands, ok = decision.levels[level]
    cands = cands[: int(ok.sum())]
    if not len(cands):  # a leaf, or no child could be drawn: the draft row is not used
        draft_row = target_row
    return audit_entry(
        target_row,
        draft_row,
        cands,
        top,
        node=node,
        depth=tree.depths[node],
        accepted_index=accepted_index,
        token=int(token),
    )
