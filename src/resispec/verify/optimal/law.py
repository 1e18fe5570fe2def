"""``optimal``: the optimal exact verifier for k i.i.d. candidates (docs/optimal-verifier.md).

Not a sequential plan. Two steps at each node:

1. *Selection* by perturbed priority: every candidate position draws a key from a law that depends only
   on its token (``plan.py``); the candidate with the smallest key is *selected*. Its token Z has
   the plan's selection law r.
2. *Single-draft speculative step*: Z is *accepted* with probability min(1, p(Z) / r(Z)); otherwise the
   *residual* token is drawn from (p - r)^+ / sum (p - r)^+.

The output law is min(p, r) + (1 - sum min(p, r)) (p - r)^+ / sum (p - r)^+ = p for any r summing to 1,
and the plan's r makes the acceptance sum min(p, r) equal alpha*. In a tree the engine continues the
subtree of the selected *position* (duplicates allowed): the decision uses only this node's candidates
and fresh randomness, so that subtree stays a valid i.i.d. draft.

Cost per node: the plan O(V log V) (built once per node, float64 whatever the input dtype), sampling
O(k log V).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .plan import (
    GroupSegment,
    OptimalPlan,
    exclusive_cumsum,
    int_power,
    psi_increment,
    ratio_order,
    segment_tables,
    stick_breaking,
    tight_indices,
    water_level,
)


class NodeLaw(NamedTuple):
    """The two-step form of a plan: acceptance probability of each selected token ``accept`` [V], the
    residual measure ``residual`` [V] (unnormalised, (p - r)^+), the output ``law`` [V] and the
    ``acceptance`` sum min(p, r)."""

    accept: torch.Tensor
    residual: torch.Tensor
    law: torch.Tensor
    acceptance: torch.Tensor


def build_plan(target_probs: torch.Tensor, draft_probs: torch.Tensor, num_candidates: int) -> OptimalPlan:
    """The optimal plan of one node; target_probs, draft_probs: float64 [V], each summing to 1."""
    k, device = num_candidates, target_probs.device
    order, rho = ratio_order(target_probs, draft_probs)
    vocab = order.shape[0]
    rank = torch.empty_like(order)
    rank[order] = torch.arange(vocab, device=device)
    draft_sorted, target_sorted = draft_probs[order], target_probs[order]  # [V]
    key = exclusive_cumsum(draft_sorted).clamp(0.0, 1.0)  # [V + 1]: home interval ends Q_j
    key[-1] = 1.0
    survival = int_power(1 - key, k)  # [V + 1]: 1 - psi(Q_j)
    gaps = (1 - survival) - exclusive_cumsum(target_sorted)  # [V + 1]: D_j
    jstar = int(torch.argmin(gaps))
    tight = tight_indices(gaps, jstar)  # [T]
    lengths = torch.diff(tight)
    segment_of = torch.repeat_interleave(torch.arange(lengths.shape[0], device=device), lengths)  # [V]
    selection_sorted = survival[:-1] - survival[1:]  # singletons: key uniform on the home interval
    groups = {}
    for index in torch.nonzero(lengths > 1).flatten().tolist():
        lo, hi = int(tight[index]), int(tight[index + 1])
        side = "A" if hi <= jstar else "H"
        found = group_segment(lo, hi, side, (rho, draft_sorted, target_sorted), key, k)
        if found is not None:
            groups[index], selection_sorted[lo:hi] = found
    selection = torch.empty_like(selection_sorted)
    selection[order] = selection_sorted
    alpha = min(1.0, 1.0 + float(gaps[jstar]))
    return OptimalPlan(order, rank, segment_of, groups, selection, alpha, jstar)


def group_segment(lo: int, hi: int, side: str, sorted_probs, key: torch.Tensor, k: int):
    """(GroupSegment, selection [hi - lo]) of sorted positions lo..hi-1, or None if none is drafted.

    sorted_probs: (rho, draft, target) [V] in sorted order; key [V + 1]: the home interval ends.
    """
    rho, draft, target = (values[lo:hi] for values in sorted_probs)
    drafted = torch.nonzero(draft > 0).flatten()  # q = 0 tokens are never candidates
    if drafted.numel() == 0:
        return None
    if drafted.numel() == hi - lo:
        drafted = slice(None)  # all drafted (softmax outputs): views instead of gathers
    start, stop = float(key[lo]), float(key[hi])
    total = float(psi_increment(start, stop, k))
    members, mass, value = water_level(rho[drafted], draft[drafted], target[drafted], side, total)
    x, lam = stick_breaking(start, stop, mass, value, k)
    tables = segment_tables(x, lam, mass, k, start)
    group_of = torch.full((hi - lo,), -1, dtype=torch.long, device=key.device)
    group_of[drafted] = members
    selection = torch.zeros_like(draft)
    selection[drafted] = (tables.value / mass)[members] * draft[drafted]  # members share a key law
    segment = GroupSegment(
        lo, hi, group_of, x, lam, tables.lb, tables.log_b, tables.block, mass, tables.value
    )
    return segment, selection


def two_step_law(target_probs: torch.Tensor, selection: torch.Tensor) -> NodeLaw:
    """Select Z ~ r, accept it with probability min(1, p / r) (1 where r = 0 < p), else draw the
    residual (p - r)^+: the law is exactly p for any r summing to 1. Inputs and outputs [V], float64."""
    accepted = torch.minimum(target_probs, selection)  # [V]
    acceptance = accepted.sum()
    residual = (target_probs - selection).clamp_min(0)  # [V]
    total = residual.sum()
    law = accepted + (1 - acceptance) * residual / total if bool(total > 0) else accepted
    return NodeLaw(accept_probability(target_probs, selection), residual, law, acceptance)


def accept_probability(target_probs: torch.Tensor, selection: torch.Tensor) -> torch.Tensor:
    """a = min(1, p / r), and 1 where r = 0 < p (such a token is selected with probability ~0); [...]."""
    ratio = target_probs / selection.clamp_min(torch.finfo(selection.dtype).tiny)
    return torch.where(selection > 0, ratio.clamp(max=1.0), (target_probs > 0).to(selection.dtype))


def optimal_law(target_probs: torch.Tensor, draft_probs: torch.Tensor, num_candidates: int):
    """(law [V], acceptance) of ``optimal`` for float64 inputs [V] that sum to 1."""
    plan = build_plan(target_probs, draft_probs, num_candidates)
    node = two_step_law(target_probs, plan.selection)
    return node.law, node.acceptance


NOT_DRAFTED = 2**62  # segment sentinel for a candidate with q = 0 (a null event): it never wins


def select_position(
    plan: OptimalPlan, candidates: torch.Tensor, drafted: torch.Tensor, generator
) -> int | None:
    """Index into ``candidates`` [k] of the selected candidate (the smallest key), or None when no
    candidate is drafted (``drafted`` [k] bool: q > 0). Costs O(k log V)."""
    positions = plan.rank[candidates]  # [k] sorted positions
    segments = torch.where(drafted, plan.segment_of[positions], NOT_DRAFTED)
    winner = int(segments.min())
    if winner == NOT_DRAFTED:
        return None
    rivals = torch.nonzero(segments == winner).flatten()  # [n]: candidates in the winning segment
    segment = plan.groups.get(winner)
    if segment is None:  # a singleton segment: every rival holds its token, their keys are i.i.d.
        keys = torch.rand(rivals.shape, generator=generator, device=rivals.device, dtype=torch.float64)
    else:
        keys = draw_keys(segment, segment.group_of[positions[rivals] - segment.lo], generator)
    return int(rivals[torch.argmin(keys)])


def draw_keys(segment: GroupSegment, groups: torch.Tensor, generator) -> torch.Tensor:
    """Keys [n] for candidates of groups [n] of one segment, by inverting each group's key CDF:
    piece m is the first of the group's block with log_b_m >= log u + log_b_g, then uniform within."""
    uniform = torch.rand(groups.shape, generator=generator, device=groups.device, dtype=torch.float64)
    level = torch.log(uniform) + segment.log_b[groups]  # [n]
    first = segment.block[groups]  # [n]
    piece = torch.empty_like(groups)
    for block_start in first.unique().tolist():  # almost always one block
        mine = first == block_start
        stop = int(torch.searchsorted(segment.block, block_start, right=True))
        piece[mine] = block_start + torch.searchsorted(segment.log_b[block_start:stop], level[mine])
    piece = torch.minimum(torch.maximum(piece, first), groups)
    before = torch.where(piece > first, segment.log_b[(piece - 1).clamp_min(0)], -torch.inf)
    frac = torch.exp(level - segment.lb[piece]) - torch.exp(before - segment.lb[piece])
    frac = torch.nan_to_num(frac, nan=0.5, posinf=1.0).clamp(0.0, 1.0)
    return segment.x[piece] + frac * (segment.x[piece + 1] - segment.x[piece])
