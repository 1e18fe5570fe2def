"""Stick-breaking and key tables of ``optimal``'s long segments over the sorted vocabulary, batched
(docs/optimal-verifier.md sections 6-8).

Every array is [B, V] in each row's sorted (p/q descending) order. A group lives at its *head*, its first
sorted position; every quantity of section 6-7 (w, the Newton root x, lam, the log-space tables) is
stored at the heads, and the scans that run over groups in the per-node code (``plan.py``) run
here over positions as segmented scans (Hillis-Steele: log2 V shifted steps, no cancellation), with
non-head positions neutral. Newton runs NEWTON_ITERATIONS steps on every head with converged roots
frozen (the per-node solver drops them instead). Nothing depends on how many segments or groups a row
has, so shapes are fixed and no value is read on the host.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from .plan import EPS, NEWTON_ITERATIONS, ROUNDING_FLOOR, STEP_FLOOR, int_power

SCANS = {  # segmented scans: (combine, neutral element)
    "add": (torch.add, 0.0),
    "max": (torch.maximum, -torch.inf),
    "logaddexp": (torch.logaddexp, -torch.inf),
}


def pow_rows(base: torch.Tensor, exponent: torch.Tensor, largest: int) -> torch.Tensor:
    """base ** exponent elementwise for integer exponents (broadcast) in 0..largest, by the same repeated
    squaring as ``int_power`` (so equal to the per-node plan's powers bit for bit)."""
    result = torch.ones_like(base)
    for power in range(1, largest + 1):
        result = torch.where(exponent == power, int_power(base, power), result)
    return result


def seg_scan(values: torch.Tensor, segment: torch.Tensor, op: str, reverse: bool = False) -> torch.Tensor:
    """Inclusive scan of values [B, V] along the last axis restarting at every change of ``segment`` [B, V]
    (non-decreasing ids); ``reverse`` scans from the right."""
    combine, neutral = SCANS[op]
    if reverse:
        return seg_scan(values.flip(-1), segment.flip(-1), op).flip(-1)
    size, shift = values.shape[-1], 1
    while shift < size:
        before = torch.cat([torch.full_like(values[:, :shift], neutral), values[:, :-shift]], dim=-1)
        same = torch.cat(
            [
                torch.zeros_like(segment[:, :shift], dtype=torch.bool),
                segment[:, shift:] == segment[:, :-shift],
            ],
            dim=-1,
        )
        values = torch.where(same, combine(values, before), values)
        shift *= 2
    return values


def _h_terms(x, start, base, w, mass_before, value_before, k, largest):
    """h_g(x), its slope and rounding floor (``plan.h_terms``, batched)."""
    one_minus = 1 - x
    power_below = pow_rows(one_minus, k - 1, largest)
    gain = base - power_below * one_minus
    distance = x - start
    value = gain - value_before - w * (distance - mass_before)
    floor = ROUNDING_FLOOR * (gain.abs() + value_before + w * (distance.abs() + mass_before))
    return value, k * power_below - w, floor


def newton_rows(start, low, high, terms, active, k, largest: int) -> torch.Tensor:
    """Largest roots of the concave h_g on [low, high] (``plan.newton_roots``) where ``active``;
    terms = (w, mass_before, value_before)."""
    base = pow_rows(1 - start, k, largest)
    terms = (*terms, k, largest)
    h_low = _h_terms(low, start, base, *terms)[0]
    value, slope, floor = _h_terms(high, start, base, *terms)
    root = torch.where(value >= 0, high, low)
    inside = active & (value < 0) & (h_low > 0)
    current, frozen = high, ~inside
    for _ in range(NEWTON_ITERATIONS):
        step = torch.minimum(torch.fmax(current - value / slope, low), current)
        converged = value.abs() <= floor
        step = torch.where(converged, current, step)
        done = converged | (current - step <= STEP_FLOOR * current.abs().clamp_min(1.0))
        current = torch.where(frozen, current, step)
        frozen = frozen | done
        value, slope, floor = _h_terms(current, start, base, *terms)
    return torch.where(inside, current, root)


class Groups(NamedTuple):
    """Groups at their heads [B, V]: ``head`` (bool), ``mass``, ``value``, ``mass_before``,
    ``value_before`` (within the segment), ``last`` (the segment's last group), ``start`` / ``stop`` (the
    segment's key interval) and ``segment`` ids."""

    head: torch.Tensor
    mass: torch.Tensor
    value: torch.Tensor
    mass_before: torch.Tensor
    value_before: torch.Tensor
    last: torch.Tensor
    start: torch.Tensor
    stop: torch.Tensor
    segment: torch.Tensor


class Tables(NamedTuple):
    """Per head [B, V]: piece start ``x_prev`` and ``width``, ``lb``, ``log_b``, the block's first head
    ``block_first`` (a position), ``value`` (exact selection mass); ``head_rank`` [B, V] and
    ``rank_position`` [B, V + 1] map heads to their rank in the row and back."""

    x_prev: torch.Tensor
    width: torch.Tensor
    lb: torch.Tensor
    log_b: torch.Tensor
    block_first: torch.Tensor
    value: torch.Tensor
    head_rank: torch.Tensor
    rank_position: torch.Tensor
    head: torch.Tensor


def _previous_head(head: torch.Tensor) -> torch.Tensor:
    """Position of the closest head strictly before each position [B, V] (-1 if none)."""
    index = torch.arange(head.shape[-1], device=head.device).expand_as(head)
    last = torch.where(head, index, -1).cummax(-1).values
    return torch.cat([torch.full_like(last[:, :1], -1), last[:, :-1]], dim=-1)


def stick_rows(groups: Groups, k, largest: int):
    """Root x and lam at every head (``plan.stick_breaking``), and the previous head [B, V]."""
    g = groups
    tiny = torch.finfo(g.mass.dtype).tiny
    w = torch.where(g.head, g.value / g.mass.clamp_min(tiny), 0.0)
    low = (g.start + g.mass_before + g.mass).clamp(max=g.stop)
    root = newton_rows(g.start, low, g.stop, (w, g.mass_before, g.value_before), g.head & ~g.last, k, largest)
    root = torch.where(g.last, g.stop, torch.maximum(root, low))
    root = seg_scan(torch.where(g.head, root, -torch.inf), g.segment, "max").clamp(max=g.stop)
    free = (root - g.start) - g.mass_before
    lam = torch.where(free > 0, torch.minimum(torch.ones_like(free), g.mass / free.clamp_min(EPS)), 1.0)
    lam = torch.where(g.last, 1.0, lam)
    previous = _previous_head(g.head)
    same = (previous >= 0) & (g.segment.gather(-1, previous.clamp_min(0)) == g.segment)
    return root, lam, torch.where(same, previous, -1)


def slot_tables(groups: Groups, root, lam, previous, k, largest: int) -> Tables:
    """Section 7's log-space tables and exact group values (``plan.segment_tables``)."""
    g = groups
    has_previous = previous >= 0
    safe = previous.clamp_min(0)
    x_prev = torch.where(has_previous, root.gather(-1, safe), g.start)
    width = torch.where(g.head, root - x_prev, 0.0)
    starts_block = g.head & (~has_previous | (lam.gather(-1, safe) >= 1))
    block = starts_block.long().cumsum(-1)  # non-decreasing block ids
    index = torch.arange(g.head.shape[-1], device=g.head.device).expand_as(g.head)
    block_first = torch.where(starts_block, index, -1).cummax(-1).values
    log_keep = torch.where(g.head, torch.log1p(-lam.clamp(max=1.0)), 0.0)
    log_keep = torch.where(torch.isfinite(log_keep), log_keep, 0.0)
    log_c = seg_scan(log_keep, block, "add") - log_keep  # exclusive within the block
    lb = torch.where(g.head, torch.log(width) - log_c, -torch.inf)
    log_b = seg_scan(lb, block, "logaddexp")
    share = torch.where(g.head & torch.isfinite(log_b), g.mass * torch.exp(-log_b), 0.0)
    density = torch.where(g.head, torch.exp(-log_c) * seg_scan(share, block, "add", reverse=True), 0.0)
    used = g.head & (width > 0)
    piece = torch.where(used, density * width, 0.0)
    through = seg_scan(piece, g.segment, "add")
    cdf, cdf_next = (g.start + through - piece).clamp(max=1.0), (g.start + through).clamp(max=1.0)
    drop = pow_rows(1 - cdf, k, largest) - pow_rows(1 - cdf_next, k, largest)
    tiny = torch.finfo(density.dtype).tiny
    gain = torch.where(used & (density > 0), drop / density.clamp_min(tiny), 0.0)
    log_gain = torch.where(gain > 0, -log_c + torch.log(gain.clamp_min(tiny)), -torch.inf)
    log_a = seg_scan(torch.where(g.head, log_gain, -torch.inf), block, "logaddexp")
    value = torch.nan_to_num(g.mass * torch.exp(log_a - log_b), nan=0.0, posinf=0.0)
    value = torch.where(g.head, value, 0.0)
    head_rank = (g.head.long().cumsum(-1) - 1).clamp_min(0)  # positions before any head: 0 (unused)
    rank_position = torch.zeros(g.head.shape[0], g.head.shape[1] + 1, dtype=torch.long, device=g.head.device)
    rank_position.scatter_(-1, torch.where(g.head, head_rank, g.head.shape[1]), index)
    return Tables(x_prev, width, lb, log_b, block_first, value, head_rank, rank_position, g.head)


def draw_group_keys(tables: Tables, head, uniform) -> torch.Tensor:
    """Keys [B, k] of candidates whose group head is ``head`` [B, k] (positions), by inverting the
    group's key CDF (``optimal.draw_keys``): the piece is the block's first head with log_b >= level."""
    t = tables
    level = torch.log(uniform) + t.log_b.gather(-1, head)  # [B, k]
    first = t.block_first.gather(-1, head).clamp_min(0)  # -1: not in a group (the key is unused)
    index = torch.arange(t.log_b.shape[-1], device=head.device)
    inside = t.head[:, None, :] & (index >= first[..., None]) & (index <= head[..., None])  # [B, k, V]
    below = (inside & (t.log_b[:, None, :] < level[..., None])).sum(-1)
    first_rank, head_rank = t.head_rank.gather(-1, first), t.head_rank.gather(-1, head)
    piece_rank = torch.minimum(first_rank + below, head_rank)
    piece = t.rank_position.gather(-1, piece_rank)
    before_piece = t.rank_position.gather(-1, (piece_rank - 1).clamp_min(0))
    before = torch.where(piece_rank > first_rank, t.log_b.gather(-1, before_piece), -torch.inf)
    lb = t.lb.gather(-1, piece)
    frac = torch.exp(level - lb) - torch.exp(before - lb)
    frac = torch.nan_to_num(frac, nan=0.5, posinf=1.0).clamp(0.0, 1.0)
    return t.x_prev.gather(-1, piece) + frac * t.width.gather(-1, piece)
