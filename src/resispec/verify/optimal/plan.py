"""The plan of the ``optimal`` verifier (docs/optimal-verifier.md sections 1-7): per node, in float64.

Terms. Tokens are sorted by ratio rho = p/q descending (q = 0 < p first, p = q = 0 last, ties by token
id); sorted token j owns the *home interval* [Q_j, Q_{j+1}] of the key axis [0, 1]. With
psi(t) = 1 - (1 - t)^k and D_j = psi(Q_j) - P_j, alpha* = 1 + min_j D_j at j* (first argmin). The
indices where D meets its envelope (running minimum up to j*, suffix minimum after) cut the sorted
tokens into *segments*, strict priority classes: a candidate of an earlier segment always wins. A
*singleton* segment's key is uniform on its home interval; a longer segment splits its tokens into
*groups* sharing one key law each (stick-breaking, section 6). The plan's *selection law* r is the
exact law of the selected candidate under the key laws as built (section 7), whatever rounding did.

Cost: one sort, cumulative sums and one vectorised Newton solve per long segment: O(V log V).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

NEWTON_ITERATIONS = 60  # safeguarded Newton from the right converges in 10-40 steps in float64 (spec s. 6)
EPS = torch.finfo(torch.float64).eps
ROUNDING_FLOOR = 8 * EPS  # |h| below 8 eps * (magnitude of its terms) is rounding noise: the root is found
STEP_FLOOR = 2 * EPS  # relative Newton step below which the iterate no longer moves
COMPACT_SHARE = 8  # drop converged roots from the Newton arrays once at least 1/8 of them are done


@dataclass
class GroupSegment:
    """Sampling tables of a segment with groups: sorted positions ``lo..hi-1``, G groups, G pieces.

    ``group_of`` [hi - lo] long: group of each position (-1: q = 0, never drafted); ``x`` [G + 1]: piece
    endpoints (piece m is [x_m, x_{m+1}]); ``lam`` [G]: share of the free key measure group g takes;
    ``lb`` [G] = log(width_m) - C_m; ``log_b`` [G]: log normaliser of group g's key law (log-sum of lb
    over its block up to g); ``block`` [G] long: first piece of each group's block (products restart
    after an exhausted prefix); ``mass`` / ``value`` [G]: q-mass and selection mass of each group.
    """

    lo: int
    hi: int
    group_of: torch.Tensor
    x: torch.Tensor
    lam: torch.Tensor
    lb: torch.Tensor
    log_b: torch.Tensor
    block: torch.Tensor
    mass: torch.Tensor
    value: torch.Tensor


@dataclass
class OptimalPlan:
    """One node's plan. ``order`` [V]: sorted position -> token; ``rank`` [V]: token -> sorted position;
    ``segment_of`` [V]: sorted position -> segment (its priority, lower wins); ``groups``: segment index
    -> GroupSegment for segments with groups; ``selection`` [V]: r, the law of the selected candidate
    (token indexing); ``alpha_star``: the bound; ``jstar``: first argmin of D."""

    order: torch.Tensor
    rank: torch.Tensor
    segment_of: torch.Tensor
    groups: dict[int, GroupSegment]
    selection: torch.Tensor
    alpha_star: float
    jstar: int


def int_power(base: torch.Tensor | float, exponent: int) -> torch.Tensor | float:
    """base ** exponent for an int exponent >= 0 by repeated squaring (float64 ``pow`` costs far more
    than multiplications on a CPU; docs/reproduction-notes.md); a Python float stays a float (the same
    float64 products)."""
    result, square = (torch.ones_like(base) if isinstance(base, torch.Tensor) else 1.0), base
    while exponent:
        if exponent & 1:
            result = result * square
        exponent >>= 1
        if exponent:
            square = square * square
    return result


def psi_increment(start: torch.Tensor | float, stop: torch.Tensor | float, k: int) -> torch.Tensor | float:
    """psi(stop) - psi(start) = (1 - start)^k - (1 - stop)^k (elementwise; floats or float64 tensors)."""
    return int_power(1 - start, k) - int_power(1 - stop, k)


def ratio_order(target: torch.Tensor, draft: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(order [V], rho [V] in sorted order): tokens by p/q descending; rho = inf if q = 0 < p, -1 if
    p = q = 0; ties keep token order (stable sort)."""
    rho = torch.where(draft > 0, target / draft.clamp_min(torch.finfo(draft.dtype).tiny), torch.inf)
    rho = torch.where((draft > 0) | (target > 0), rho, -1.0)  # [V]
    rho_sorted, order = torch.sort(rho, descending=True, stable=True)
    return order, rho_sorted


def exclusive_cumsum(values: torch.Tensor) -> torch.Tensor:
    """[0, v0, v0 + v1, ...] of length len(values) + 1."""
    return torch.cat([values.new_zeros(1), values.cumsum(0)])


def tight_indices(gaps: torch.Tensor, jstar: int) -> torch.Tensor:
    """Indices j in 0..V (long [T], increasing, 0 and V included) where D_j equals its envelope: the
    running minimum up to j*, the suffix minimum from j*."""
    envelope = torch.cat(
        [gaps[: jstar + 1].cummin(0).values, gaps[jstar:].flip(0).cummin(0).values.flip(0)[1:]]
    )  # [V + 1]
    tight = envelope == gaps
    tight[0] = tight[-1] = True
    return torch.nonzero(tight).flatten()


class Groups(NamedTuple):
    """Groups of a segment's drafted tokens, in order of non-increasing w = value / mass: ``members``
    [n] long (group of each token), ``mass`` [G] (q-mass) and ``value`` [G] (target selection mass)."""

    members: torch.Tensor
    mass: torch.Tensor
    value: torch.Tensor


def water_level(
    rho: torch.Tensor, draft: torch.Tensor, target: torch.Tensor, side: str, total: float
) -> Groups:
    """Zero-loss groups of a segment's drafted tokens (section 5); rho, draft, target [n] in descending
    ratio order, ``total`` the segment's selection mass psi(b) - psi(a).

    Side "H" (targets r >= p): w = max(rho, theta); the tokens with rho <= theta form one merged last
    group, the others are singletons with value p. Side "A" (r <= p): w = min(rho, theta); the tokens
    with rho >= theta form one merged first group. theta: the first split consistent with the ratios.
    """
    n, device = rho.shape[0], rho.device
    p_cum, q_cum = exclusive_cumsum(target), exclusive_cumsum(draft)  # [n + 1]
    rho_next = torch.cat([rho, rho.new_full((1,), -torch.inf)])  # rho_m, -inf past the end
    rho_prev = torch.cat([rho.new_full((1,), torch.inf), rho])  # rho_{m-1}, inf before the start
    if side == "H":  # split = number of leading singletons
        sizes = torch.arange(n, device=device)
        theta = (total - p_cum[sizes]) / (q_cum[-1] - q_cum[sizes])
    else:  # split = number of leading merged tokens
        sizes = torch.arange(1, n + 1, device=device)
        theta = (total - (p_cum[-1] - p_cum[sizes])) / q_cum[sizes]
    ok = (theta >= rho_next[sizes]) & (theta <= rho_prev[sizes]) & torch.isfinite(theta)
    first = torch.nonzero(ok).flatten()
    if side == "H":
        split = int(sizes[first[0]]) if first.numel() else n
        members = torch.arange(n, device=device).clamp(max=split)  # tokens split.. share group split
        value = torch.cat([target[:split], (total - p_cum[split]).reshape(1)])[: min(split + 1, n)]
        if split == n:  # no consistent level (rounding): the first group absorbs the difference
            value[0] += total - value.sum()
    else:
        split = int(sizes[first[0]]) if first.numel() else 1
        members = (torch.arange(n, device=device) - (split - 1)).clamp(min=0)  # tokens ..split-1: group 0
        value = torch.cat([target.new_zeros(1), target[split:]])
        value[0] = total - value[1:].sum()
    mass = draft.new_zeros(value.shape[0]).index_add_(0, members, draft)
    return Groups(members, mass, value)


def stick_breaking(start: float, stop: float, mass, value, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Piece endpoints x [G + 1] and shares lam [G] of a segment's key interval [start, stop] (section 6).

    Groups g (mass [G], value [G], in order of non-increasing w_g = value_g / mass_g) take the share
    lam_g of the key measure still free on [start, x_g]; x_g is the largest root on [lo_g, stop] of the
    concave h_g(x) = psi(x) - psi(start) - V_g - w_g ((x - start) - M_g) (M_g, V_g: mass and value of the
    groups before g), solved for every g at once.
    """
    w = value / mass
    mass_before, value_before = exclusive_cumsum(mass)[:-1], exclusive_cumsum(value)[:-1]  # [G]
    low = (start + mass_before + mass).clamp(max=stop)  # the free measure on [start, x] must hold m_g
    high = torch.full_like(low, stop)
    root = newton_roots(start, low, high, w, mass_before, value_before, k)
    root[-1] = stop
    root = torch.maximum(root, low)
    if bool((root[1:] < root[:-1]).any()):  # x_g >= x_{g-1} holds in exact arithmetic; mend rounding
        root = root.cummax(0).values
    root = root.clamp(max=stop)
    free = (root - start) - mass_before  # [G]: free key measure on [start, x_g]
    lam = torch.where(free > 0, torch.minimum(torch.ones_like(free), mass / free.clamp_min(EPS)), 1.0)
    lam[-1] = 1.0
    return torch.cat([root.new_full((1,), start), root]), lam


def newton_roots(start, low, high, w, mass_before, value_before, k: int) -> torch.Tensor:
    """Largest roots [G] of the concave h_g on [low_g, high_g]: high_g if h_g(high_g) >= 0, low_g if
    h_g(low_g) <= 0, else Newton from the right. Right of the largest root the tangent of a concave
    function stays above it, so the iterates decrease monotonically onto the root without overshooting
    (clamped to [low_g, x] against rounding); converged roots leave the active set."""
    base = float(int_power(1 - float(start), k))  # 1 - psi(start)
    terms = (w, mass_before, value_before)
    h_low = h_terms(low, start, base, terms, k)[0]
    h_high, slope, floor = h_terms(high, start, base, terms, k)
    root = torch.where(h_high >= 0, high, low)
    active = torch.nonzero((h_high < 0) & (h_low > 0)).flatten()  # roots strictly inside the bracket
    current, low = high[active], low[active]
    value, slope, floor = h_high[active], slope[active], floor[active]
    terms = tuple(t[active] for t in terms)
    for _ in range(NEWTON_ITERATIONS):
        if active.numel() == 0:
            break
        step = torch.minimum(torch.fmax(current - value / slope, low), current)  # fmax: NaN -> low
        converged = value.abs() <= floor
        step = torch.where(converged, current, step)
        done = converged | (current - step <= STEP_FLOOR * current.abs().clamp_min(1.0))
        finished = int(done.sum())
        if finished * COMPACT_SHARE >= done.numel():  # compact only when it pays; done roots stay put
            root[active[done]] = step[done]
            keep = ~done
            active, step, low, terms = active[keep], step[keep], low[keep], tuple(t[keep] for t in terms)
        current = step
        value, slope, floor = h_terms(current, start, base, terms, k)
    root[active] = current
    return root


class HTerms(NamedTuple):
    """h_g(x) [n], its slope h_g'(x) [n] and the rounding floor of h_g(x) [n]."""

    value: torch.Tensor
    slope: torch.Tensor
    floor: torch.Tensor


def h_terms(x: torch.Tensor, start: float, base: float, terms, k: int) -> HTerms:
    """h_g(x) and its slope and floor at x [n]; terms = (w, mass_before, value_before), each [n]."""
    w, mass_before, value_before = terms
    one_minus = 1 - x
    power_below = int_power(one_minus, k - 1)  # (1 - x)^(k - 1)
    gain = base - power_below * one_minus  # psi(x) - psi(start)
    distance = x - start
    value = gain - value_before - w * (distance - mass_before)
    floor = ROUNDING_FLOOR * (gain.abs() + value_before + w * (distance.abs() + mass_before))
    return HTerms(value, k * power_below - w, floor)


class SegmentTables(NamedTuple):
    """Log-space tables of a segment's key laws (section 7), each [G]; see GroupSegment."""

    lb: torch.Tensor
    log_b: torch.Tensor
    block: torch.Tensor
    value: torch.Tensor


def block_bounds(lam: torch.Tensor) -> list[tuple[int, int]]:
    """(first, stop) piece ranges of the blocks: products restart after a group with lam = 1."""
    cuts = (torch.nonzero(lam[:-1] >= 1).flatten() + 1).tolist()
    starts = [0] + cuts
    return list(zip(starts, cuts + [lam.shape[0]], strict=True))


def segment_tables(x: torch.Tensor, lam: torch.Tensor, mass: torch.Tensor, k: int, key_start: float):
    """Sampling tables and the exact selection mass of each group under the key laws as built.

    Group g's normalised key density on piece m <= g of its block is exp(-C_m - log_b_g) with
    C_m = sum_{i<m} log(1 - lam_i). The value uses the *actual* marginal key density d_m (1 up to
    rounding) and CDF F (F = key_start at x_0): value_g = m_g sum_m f_g(m) [(1-F_m)^k - (1-F_{m+1})^k] / d_m.
    """
    width = x[1:] - x[:-1]  # [G]
    log_keep = torch.log1p(-lam.clamp(max=1.0))  # [G], -inf where lam = 1
    lb, log_b, density = torch.empty_like(lam), torch.empty_like(lam), torch.empty_like(lam)
    block = torch.empty(lam.shape, dtype=torch.long, device=lam.device)
    log_c = torch.empty_like(lam)
    bounds = block_bounds(lam)
    for first, stop in bounds:
        c = exclusive_cumsum(log_keep[first : stop - 1])  # [stop - first]
        log_c[first:stop], block[first:stop] = c, first
        lb[first:stop] = torch.log(width[first:stop]) - c
        log_b[first:stop] = torch.logcumsumexp(lb[first:stop], 0)
        share = torch.where(
            torch.isfinite(log_b[first:stop]), mass[first:stop] * torch.exp(-log_b[first:stop]), 0.0
        )
        density[first:stop] = torch.exp(-c) * share.flip(0).cumsum(0).flip(0)
    used = width > 0
    cdf = (key_start + exclusive_cumsum(torch.where(used, density * width, 0.0))).clamp(max=1.0)  # [G + 1]
    survival = int_power(1 - cdf, k)  # [G + 1]
    gain = torch.where(used & (density > 0), (survival[:-1] - survival[1:]) / density, 0.0)
    log_gain = torch.where(
        gain > 0, -log_c + torch.log(gain.clamp_min(torch.finfo(gain.dtype).tiny)), -torch.inf
    )
    log_a = torch.cat([torch.logcumsumexp(log_gain[first:stop], 0) for first, stop in bounds])
    value = torch.nan_to_num(mass * torch.exp(log_a - log_b), nan=0.0, posinf=0.0)
    return SegmentTables(lb, log_b, block, value)
