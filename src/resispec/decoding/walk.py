"""The verification walk of one step: from the root, each node's verifier either accepts one of its
candidate children (the walk descends into it) or rejects them all and draws the step's final token.

Vocabulary (as in vLLM's rejection sampler): *accepted* tokens are drafted candidates the verifier
accepts; when a node rejects all its candidates, the step ends with a *residual* token drawn from the
verifier's residual distribution (vLLM: "recovered"); at a leaf (no candidates) the step ends with a
*bonus* token drawn from the target. A step commits its accepted tokens plus that final token.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from resispec.decoding.drafters import DraftTree
from resispec.decoding.records import audit_entry
from resispec.decoding.target import NodeProbs


@dataclass
class WalkResult:
    """What one verification walk decided, and the per-step counts its record keeps.

    ``accepted_nodes``: tree nodes of the accepted tokens, root excluded, in path order;
    ``final_token``: the residual or bonus token; ``final_kind``: ``"residual"`` or ``"bonus"``.
    ``position_tried[i]`` / ``position_accepted[i]``: visits / acceptances of the (i+1)-th sibling
    candidate; ``depth_tried[d]`` / ``depth_accepted[d]``: the same per drafted level d + 1.
    """

    accepted_nodes: list[int]
    final_token: int
    final_kind: str
    position_tried: list[int]
    position_accepted: list[int]
    depth_tried: list[int]
    depth_accepted: list[int]
    audit: list[dict] = field(default_factory=list)
    shaping_time_s: dict[str, float] = field(default_factory=dict)

    @classmethod
    def start(cls, max_branch: int, drafted_levels: int) -> WalkResult:
        zeros = [0] * max_branch
        return cls([], -1, "", list(zeros), list(zeros), [0] * drafted_levels, [0] * drafted_levels)

    def count(self, depth: int, num_candidates: int, accepted_index: int | None) -> None:
        """Record a node at ``depth`` that tried its candidates up to the accepted one (or all)."""
        self.depth_tried[depth] += 1
        tried = num_candidates if accepted_index is None else accepted_index + 1
        for i in range(tried):
            self.position_tried[i] += 1
        if accepted_index is not None:
            self.position_accepted[accepted_index] += 1
            self.depth_accepted[depth] += 1

    def add_timings(self, timings: dict[str, float]) -> None:
        for key, seconds in timings.items():
            self.shaping_time_s[key] = self.shaping_time_s.get(key, 0.0) + seconds


def walk(draft: DraftTree, target_probs: NodeProbs, verifier, generator, audit_top: int | None) -> WalkResult:
    """Verify ``draft`` from the root with ``verifier``; ``audit_top=N`` logs each node's top-N pair."""
    tree = draft.tree
    valid = draft.valid.tolist()
    result = WalkResult.start(tree.max_branch, tree.depth - 1)
    node = 0
    while True:
        kids = [c for c in tree.children[node] if valid[c]]
        candidates = draft.tokens[kids]  # [k]
        draft_row = draft.draft_probs[node] if kids else target_probs[node]  # leaves: unused by k = 0
        outcome = verifier(target_probs[node], draft_row, candidates, generator)
        index = outcome.accepted_index
        result.add_timings(verifier.last_timings)
        if kids:
            result.count(tree.depths[node], len(kids), index)
        if audit_top:
            result.audit.append(
                audit_entry(
                    target_probs[node], draft_row, candidates, audit_top,
                    node=node, depth=tree.depths[node], accepted_index=index, token=int(outcome.token),
                )
            )  # fmt: skip
        if index is None:
            result.final_token, result.final_kind = int(outcome.token), "residual" if kids else "bonus"
            return result
        node = kids[index]
        result.accepted_nodes.append(node)
