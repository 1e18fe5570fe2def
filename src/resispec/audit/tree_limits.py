"""The most a tree can accept, given a chain's accepted length: the paper-limits audit.

A chain of single candidates whose levels accept with probabilities b_1..b_L (each b_i the overlap
sum_v min(p, q) at the context reached) has expected accepted length, bonus token included,
c(b) = 1 + b_1 + b_1 b_2 + ... + b_1...b_L. A complete tree with k i.i.d. children per node and an
exact verifier accepts level i with probability at most alpha* <= f_k(b_i)
(``verify.alpha_star_upper_from_beta``), so its length is at most t(b) = 1 + f(b_1) + f(b_1) f(b_2) + ...
over its ``tree_levels`` candidate levels; levels beyond the chain's are bounded by 1.

- (a) ``same_acceptance_limit``: every level accepts the same b; c(b) = X fixes b.
- (b) ``envelope_limit``: any joint law of (b_1..b_L): sup E[t(b)] subject to E[c(b)] = X, the concave
  envelope of {(c(b), t(b))} at X. Computed by a dynamic program over the chain's suffix value
  (Phi_j(x) = the envelope of sup {1 + g(b) Phi_{j+1}(y) : 1 + b y = x}) on a grid, twice: a lower value
  from feasible points only (mixtures of actual b vectors, so achievable), and an upper value from
  interval bounds on every grid cell (f and Phi are non-decreasing, so each cell is bounded by its
  corners), which makes the printed upper value a true upper bound. The grid is refined until the two
  are within ``tolerance``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from resispec.verify import alpha_star_upper_from_beta

ROUNDING_MARGIN = 1e-9  # added to every upper value: float64 rounding of the grid arithmetic is ~1e-13
MAX_POINTS = 16_000  # grid points per unit of chain length at the finest refinement


@dataclass(frozen=True)
class TreeLimit:
    """Both limits for one (chain length, chain levels, tree levels, k)."""

    chain_eal: float
    chain_levels: int
    tree_levels: int
    num_candidates: int
    same_acceptance: float  # (a): the common per-level acceptance b
    same_level_limit: float  # (a): the tree's length at that b
    envelope_low: float  # (b): achievable by some joint law (a lower value of the supremum)
    envelope_high: float  # (b): a true upper bound of the supremum
    points: int  # grid points per unit of chain length used for (b)


def _check(chain_eal: float, chain_levels: int, tree_levels: int, num_candidates: int) -> None:
    for name, value in (("chain_levels", chain_levels), ("tree_levels", tree_levels), ("k", num_candidates)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if not np.isfinite(chain_eal) or not 1.0 <= chain_eal <= chain_levels + 1:
        raise ValueError(
            f"chain_eal must lie in [1, chain_levels + 1] = [1, {chain_levels + 1}] (bonus token included),"
            f" got {chain_eal!r}"
        )


def tree_length(per_level: np.ndarray, chain_levels: int, tree_levels: int, k: int) -> np.ndarray:
    """t(b) for per-level acceptances ``per_level`` [..., L]: 1 + sum_j prod_{i <= j} (f(b_i) or 1)."""
    factors = alpha_star_upper_from_beta(np.asarray(per_level, np.float64), k)  # [..., L]
    total, reach = np.ones(factors.shape[:-1]), np.ones(factors.shape[:-1])
    for level in range(tree_levels):
        reach = reach * (factors[..., level] if level < chain_levels else 1.0)
        total = total + reach
    return total


def chain_length(per_level: np.ndarray) -> np.ndarray:
    """c(b) = 1 + b_1 + b_1 b_2 + ... for per-level acceptances [..., L]."""
    return 1.0 + np.cumprod(np.asarray(per_level, np.float64), axis=-1).sum(axis=-1)


def same_acceptance_limit(
    chain_eal: float, chain_levels: int, tree_levels: int, k: int
) -> tuple[float, float]:
    """(b, t(b, b, ...)) with b solving 1 + b + ... + b^L = chain_eal (bisection to 1e-15)."""
    _check(chain_eal, chain_levels, tree_levels, k)
    low, high = 0.0, 1.0
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if chain_length(np.full(chain_levels, mid)) < chain_eal else (low, mid)
        if high - low < 1e-15:
            break
    b = (low + high) / 2
    return b, float(tree_length(np.full(chain_levels, b), chain_levels, tree_levels, k))


def upper_hull(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The least concave majorant of the points (x_i, y_i) (x increasing), evaluated at every x_i."""
    hull: list[int] = []
    for i in range(len(x)):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            if (y[b] - y[a]) * (x[i] - x[a]) <= (y[i] - y[a]) * (x[b] - x[a]):
                hull.pop()
            else:
                break
        hull.append(i)
    return np.interp(x, x[hull], y[hull])


def _level(grid, low_next, high_next, x, factor) -> tuple[np.ndarray, np.ndarray]:
    """One step of the program: lower and upper values of psi_j on the grid ``x`` from the next level's
    values on ``grid`` (its chain values y). A pair (x, y) has b = (x - 1) / y, feasible when b <= 1."""
    lows, highs = np.empty_like(x), np.empty_like(x)
    y_lo, y_hi = grid[:-1], grid[1:]  # cells of the next level's grid
    for start in range(0, len(x), 256):
        rise = x[start : start + 256, None] - 1.0  # [R, 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            b_at = rise / grid  # [R, M] b at each next grid point
            feasible = b_at <= 1.0
            value = np.where(feasible, 1.0 + factor(np.minimum(b_at, 1.0)) * low_next, -np.inf)
            lows[start : start + 256] = value.max(axis=1)
            if len(grid) == 1:  # the last chain level: y = 1 exactly
                highs[start : start + 256] = value.max(axis=1)
                continue
            cell = y_hi >= rise  # the cell [y_lo, y_hi] holds some y >= x - 1 (b <= 1)
            bound = 1.0 + factor(np.minimum(rise / y_lo, 1.0)) * high_next[1:]  # corners of each cell
            highs[start : start + 256] = np.where(cell, bound, -np.inf).max(axis=1)
    highs = np.minimum.accumulate(highs[::-1])[::-1]  # psi is non-decreasing: psi(x) <= high(x') for x' >= x
    return lows, highs


def _program(chain_eal, chain_levels, tree_levels, k, points) -> tuple[float, float]:
    """(lower, upper) values of the envelope at chain_eal on a grid of ``points`` per unit of length."""
    grid = np.array([1.0])
    low = high = np.array([1.0 + max(0, tree_levels - chain_levels)])  # the tree's levels past the chain
    for level in range(chain_levels, 0, -1):
        span = chain_levels - level + 1
        x = np.linspace(1.0, 1.0 + span, points * span + 1)
        if level <= tree_levels:
            factor = lambda b: alpha_star_upper_from_beta(b, k)  # noqa: E731
        else:
            factor = np.zeros_like  # the tree has stopped: only its bonus token remains
        lows, highs = _level(grid, low, high, x, factor)
        step = np.append(highs[1:], highs[-1])  # psi on (x_i, x_{i+1}] <= high(x_{i+1})
        grid, low, high = x, upper_hull(x, lows), upper_hull(x, step)
    return float(np.interp(chain_eal, grid, low)), float(np.interp(chain_eal, grid, high)) + ROUNDING_MARGIN


def envelope_limit(
    chain_eal: float,
    chain_levels: int,
    tree_levels: int,
    k: int,
    *,
    tolerance: float = 0.01,
    points: int = 500,
) -> tuple[float, float, int]:
    """(lower, upper, points): sup of E[t(b)] over joint laws with E[c(b)] = chain_eal lies in
    [lower, upper]; the grid doubles from ``points`` per unit until upper - lower <= tolerance."""
    _check(chain_eal, chain_levels, tree_levels, k)
    if not tolerance > 0:
        raise ValueError(f"tolerance must be > 0, got {tolerance!r}")
    while True:
        low, high = _program(chain_eal, chain_levels, tree_levels, k, points)
        if high - low <= tolerance or points >= MAX_POINTS:
            return low, high, points
        points *= 2


def tree_limit(
    chain_eal: float, chain_levels: int, tree_levels: int, k: int, *, tolerance: float = 0.01
) -> TreeLimit:
    """Both limits, (a) and (b), for a chain of ``chain_levels`` levels and a complete tree of
    ``tree_levels`` candidate levels with ``k`` i.i.d. children per node."""
    b, same = same_acceptance_limit(chain_eal, chain_levels, tree_levels, k)
    low, high, points = envelope_limit(chain_eal, chain_levels, tree_levels, k, tolerance=tolerance)
    return TreeLimit(chain_eal, chain_levels, tree_levels, k, b, same, low, high, points)
