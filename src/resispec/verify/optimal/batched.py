"""``optimal`` for many nodes at once, without host synchronisation (docs/optimal-verifier.md).

``plan_rows`` builds the plans of B rows ([B, V], float64) together, with fixed shapes: the ratio sort,
alpha*, the envelope's tight indices and the segments are row-wise scans; the water level of every long
segment is a segmented computation over the sorted vocabulary; groups live at their first sorted
position (their head), where stick-breaking, Newton (a fixed number of steps) and the key tables of
section 7 run as segmented scans (``plan_tables.py``). Nothing depends on how many segments or
groups a row has. The plan equals ``law.build_plan``'s up to rounding (``tests/verify/
test_verify_batched.py``: 1e-12), and the selection law r is the exact law of the keys as built.
It costs more vocabulary-wide work than the per-node plan, which compacts as it goes (reading sizes on the
host): ``verify_optimal_per_node`` keeps that plan for a CPU's level-by-level walk.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ..checks import as_float64
from ..rows import BatchOutcome, draw_rows
from .law import NOT_DRAFTED, accept_probability, build_plan, select_position
from .plan import ratio_order
from .plan_tables import Groups, draw_group_keys, pow_rows, slot_tables, stick_rows


class RowPlans(NamedTuple):
    """Plans of B rows: ``rank`` [B, V] (token -> sorted position), ``segment_of`` [B, V] (sorted
    position -> segment), ``long`` [B, V] (in a segment with groups), ``head_of`` [B, V] (its group's
    head), the key ``tables`` and ``selection`` r [B, V] (token order)."""

    rank: torch.Tensor
    segment_of: torch.Tensor
    long: torch.Tensor
    head_of: torch.Tensor
    tables: object
    selection: torch.Tensor


def _segments(gaps: torch.Tensor, jstar: torch.Tensor):
    """segment id, start and end [B, V] of each sorted position from D [B, V + 1] and j* [B]."""
    size = gaps.shape[-1]
    index = torch.arange(size, device=gaps.device).expand_as(gaps)
    prefix = gaps.cummin(-1).values
    suffix = gaps.flip(-1).cummin(-1).values.flip(-1)
    envelope = torch.where(index <= jstar[:, None], prefix, suffix)
    tight = envelope == gaps
    tight[:, 0] = tight[:, -1] = True
    segment = tight[:, :-1].long().cumsum(-1) - 1  # [B, V]
    start = torch.where(tight, index, 0).cummax(-1).values[:, :-1]
    following = torch.where(tight, index, size).flip(-1).cummin(-1).values.flip(-1)  # next tight >= j
    return segment, start, following[:, 1:]


def _segment_first(values: torch.Tensor, segment: torch.Tensor, size: int) -> torch.Tensor:
    """Per position, the smallest of ``values`` [B, V] over its segment."""
    first = torch.full_like(values, size).scatter_reduce(-1, segment, values, "amin")
    return first.gather(-1, segment)


def _water_level(sorted_rows, cum, seg, jstar, total) -> Groups:
    """The groups of every long segment at their heads (``plan.water_level`` for all segments at
    once). sorted_rows = (rho, q, p) [B, V]; cum = (Q, P) [B, V + 1] exclusive cumsums; seg = (segment,
    start, end) [B, V]; total [B, V]: the segment's selection mass psi(Q_end) - psi(Q_start)."""
    rho, draft, target = sorted_rows
    key, psum = cum
    segment, start, end = seg
    size = rho.shape[-1]
    index = torch.arange(size, device=rho.device).expand_as(rho)
    local, length = index - start, end - start
    side_a, long_ = end <= jstar[:, None], length > 1
    p_start, q_start, p_end = psum.gather(-1, start), key.gather(-1, start), psum.gather(-1, end)
    seg_p, seg_q = p_end - p_start, key.gather(-1, end) - q_start
    rho_after = torch.where(index + 1 < end, torch.cat([rho[:, 1:], rho[:, -1:]], -1), -torch.inf)
    rho_before = torch.where(local > 0, torch.cat([rho[:, :1], rho[:, :-1]], -1), torch.inf)
    theta_h = (total - (psum[:, :-1] - p_start)) / (seg_q - (key[:, :-1] - q_start))  # local singletons
    theta_a = (total - (p_end - psum[:, 1:])) / (key[:, 1:] - q_start)  # local + 1 merged tokens
    ok_h = (theta_h >= rho) & (theta_h <= rho_before) & torch.isfinite(theta_h)
    ok_a = (theta_a >= rho_after) & (theta_a <= rho) & torch.isfinite(theta_a)
    first = _segment_first(torch.where(torch.where(side_a, ok_a, ok_h), index, size), segment, size)
    split = torch.where(first < size, first - start + side_a.long(), torch.where(side_a, 1, length))
    cut = (start + split).clamp(max=size)  # first position after the leading split tokens
    head = long_ & torch.where(side_a, (local == 0) | (local >= split), local <= split)
    head = head & (local < length)
    merged_size = torch.where(side_a, split, length - split)
    merged = torch.where(side_a, local == 0, local == split) & (merged_size > 1)
    group_end = torch.where(
        side_a, torch.where(local == 0, cut, index + 1), torch.where(local < split, index + 1, end)
    )
    mass = torch.where(merged, key.gather(-1, group_end) - key.gather(-1, index.clamp(max=size)), draft)
    value_h = torch.where(local < split, target, total - (psum.gather(-1, cut) - p_start))
    value_h = value_h + torch.where((local == 0) & (split == length), total - seg_p, 0.0)
    value_a = torch.where(local == 0, total - (p_end - psum.gather(-1, cut)), target)
    before_h = (psum[:, :-1] - p_start) + torch.where((local > 0) & (split == length), total - seg_p, 0.0)
    before_a = torch.where(local == 0, 0.0, total - (p_end - psum[:, :-1]))
    stop = key.gather(-1, end)
    return Groups(
        head,
        torch.where(head, mass, 0.0),
        torch.where(head, torch.where(side_a, value_a, value_h), 0.0),
        key[:, :-1] - q_start,
        torch.where(side_a, before_a, before_h),
        head & (group_end == end),
        q_start,
        stop,
        segment,
    )


def _sorted(target: torch.Tensor, draft: torch.Tensor):
    """order [B, V], rank [B, V], (rho, q, p) in sorted order [B, V], (Q, P) [B, V + 1]."""
    order, rho = ratio_order(target, draft)
    positions = torch.arange(order.shape[-1], device=order.device).expand_as(order)
    rank = torch.empty_like(order).scatter_(-1, order, positions)
    draft_sorted, target_sorted = draft.gather(-1, order), target.gather(-1, order)
    zero = draft_sorted.new_zeros(draft.shape[0], 1)
    key = torch.cat([zero, draft_sorted.cumsum(-1)], -1).clamp(0.0, 1.0)
    key[:, -1] = 1.0
    psum = torch.cat([zero, target_sorted.cumsum(-1)], -1)
    return order, rank, (rho, draft_sorted, target_sorted), (key, psum)


def plan_rows(target: torch.Tensor, draft: torch.Tensor, counts: torch.Tensor, largest: int) -> RowPlans:
    """Plans of rows target, draft [B, V] (float64, each summing to 1) for ``counts`` [B] candidates
    (at most ``largest``, the candidates' padded width: known on the host)."""
    largest = max(largest, 1)
    k = counts.clamp(1, largest)[:, None]  # [B, 1]; a leaf row (k = 0) plans for one, unused
    order, rank, sorted_rows, (key, psum) = _sorted(target, draft)
    survival = pow_rows(1 - key, k, largest)  # [B, V + 1]: 1 - psi(Q_j)
    gaps = (1 - survival) - psum  # D_j
    jstar = gaps.argmin(-1)  # the first argmin
    seg = _segments(gaps, jstar)
    segment, start, end = seg
    total = survival.gather(-1, start) - survival.gather(-1, end)  # [B, V]
    groups = _water_level(sorted_rows, (key, psum), seg, jstar, total)
    root, lam, previous = stick_rows(groups, k, largest)
    tables = slot_tables(groups, root, lam, previous, k, largest)
    index = torch.arange(target.shape[-1], device=target.device).expand_as(target)
    head_of = torch.where(groups.head, index, -1).cummax(-1).values.clamp_min(0)  # each member's head
    ratio = tables.value / groups.mass.clamp_min(torch.finfo(target.dtype).tiny)
    in_group = torch.where(groups.head, ratio, 0.0).gather(-1, head_of) * sorted_rows[1]
    singleton = survival[:, :-1] - survival[:, 1:]  # key uniform on the home interval
    sorted_law = torch.where((end - start) > 1, in_group, singleton)
    selection = torch.empty_like(sorted_law).scatter_(-1, order, sorted_law)
    return RowPlans(rank, segment, (end - start) > 1, head_of, tables, selection)


def verify_optimal_rows(target_probs, draft_probs, candidates, valid, generator, tick) -> BatchOutcome:
    """Select by perturbed priority, accept with min(1, p / r), else draw the residual (p - r)^+; rows
    without a valid candidate draw the bonus token from p. ``tick`` as in ``verify.batched.verify_rows``."""
    target, draft = as_float64(target_probs, draft_probs)
    rows, k = candidates.shape
    counts = valid.sum(-1)
    plans = plan_rows(target, draft, counts, k)
    tick("budgeting")
    uniforms = torch.rand(rows, k + 2, generator=generator, device=target.device, dtype=torch.float64)
    drafted = valid & (draft.gather(-1, candidates) > 0)
    positions = plans.rank.gather(-1, candidates)  # [B, k]
    segments = torch.where(drafted, plans.segment_of.gather(-1, positions), NOT_DRAFTED)
    winner = segments.amin(-1, keepdim=True) if k else segments.new_full((rows, 1), NOT_DRAFTED)
    grouped = draw_group_keys(plans.tables, plans.head_of.gather(-1, positions), uniforms[:, :k])
    keys = torch.where(plans.long.gather(-1, positions), grouped, uniforms[:, :k])  # singletons: i.i.d.
    keys = torch.where(segments == winner, keys, torch.inf)
    index = keys.argmin(-1) if k else counts
    token = candidates.gather(-1, index[:, None])[:, 0] if k else counts
    accept = accept_probability(target.gather(-1, token[:, None]), plans.selection.gather(-1, token[:, None]))
    accepted = (winner[:, 0] != NOT_DRAFTED) & (uniforms[:, k] < accept[:, 0])
    tick("redistribution")
    residual = torch.where(counts[:, None] > 0, (target - plans.selection).clamp_min(0), target)
    final = draw_rows(residual, uniforms[:, k + 1], target)
    tick("proxy")
    return BatchOutcome(torch.where(accepted, index, -1), torch.where(accepted, token, final))


def verify_optimal_per_node(target_probs, draft_probs, candidates, valid, generator) -> BatchOutcome:
    """The same verifier row by row with the per-node plan (``law.build_plan``), whose compaction
    reads sizes on the host (a synchronisation per row, free on a CPU) but does far less vocabulary work
    than the fixed-shape plan: the engine's choice for its level-by-level walk (``verify_mode="path"``).
    A draft over a reduced vocabulary is planned on its support (``on_support``)."""
    target, draft = as_float64(target_probs, draft_probs)
    rows, k = candidates.shape
    counts = valid.sum(-1).tolist()
    accepted = torch.full((rows,), -1, dtype=torch.long, device=target.device)
    tokens = torch.zeros_like(accepted)
    uniforms = torch.rand(rows, 2, generator=generator, device=target.device, dtype=torch.float64)
    for row, count in enumerate(counts):
        residual = target[row]
        if count:
            support, p, q = on_support(target[row], draft[row])
            plan = build_plan(p, q, count)
            cands = candidates[row, :count]
            local = cands if support is None else torch.searchsorted(support, cands).clamp_max(len(q) - 1)
            index = select_position(plan, local, draft[row][cands] > 0, generator)
            if index is not None:
                accept = accept_probability(target[row, cands[index]], plan.selection[local[index]])
                if bool(uniforms[row, 0] < accept):
                    accepted[row], tokens[row] = index, cands[index]
                    continue
            residual = (target[row] - _on_vocabulary(plan.selection, support, target[row])).clamp_min(0)
        tokens[row] = draw_rows(residual[None], uniforms[row, 1:], target[row : row + 1])[0]
    return BatchOutcome(accepted, tokens)


SUPPORT_SHARE = 0.5  # plan on the draft's support when it covers at most this share of the vocabulary


def on_support(target: torch.Tensor, draft: torch.Tensor):
    """(support, p, q) of one node's rows [V]: ``support`` long [S] the tokens with q > 0 (ascending), and
    p, q [S + 1] the rows there, with every q = 0 token's target mass lumped into one last entry. Such
    tokens are never candidates: the plan selects none of them and orders them first (p / q = inf) or
    last (p = q = 0), so the plan on the support is the full plan's (``tests/verify/
    test_verify_optimal_support.py``: selections to 1e-15, the same decisions from the same seeds).
    ``(None, target, draft)`` when the support covers more than ``SUPPORT_SHARE`` of the vocabulary."""
    positive = draft > 0
    support = torch.nonzero(positive).flatten()
    if support.numel() > SUPPORT_SHARE * draft.numel():
        return None, target, draft
    lumped = torch.where(positive, 0.0, target).sum()[None]  # [1]
    return support, torch.cat([target[support], lumped]), torch.cat([draft[support], draft.new_zeros(1)])


def _on_vocabulary(selection: torch.Tensor, support: torch.Tensor | None, like: torch.Tensor):
    """A plan's selection r on the whole vocabulary [V] (0 off the draft's support)."""
    if support is None:
        return selection
    return like.new_zeros(like.shape).index_copy_(0, support, selection[:-1])
