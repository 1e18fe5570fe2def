"""Certified KL and TV of a verifier's output law against the target from a pruned law.

The one KL the audit reports (tables, figures, findings): per node, KL(p || law) in nats, with law the
verifier's exact output law on that node's vocabulary. When the history recursion pruned (``err`` > 0),
it returns a sub-probability ``l`` with l <= law entrywise and sum(law - l) = err, and the node carries
the tightest certified interval instead: every law m with m >= l and sum(m) = 1 is possible, so

- TV lies in [sum_v (l - p)_+, sum_v (l - p)_+ + err] (both ends attained);
- KL's minimum over such m is at m = max(l, c p) with c set by sum(m) = 1 (the KKT conditions of
  the convex problem: m = p / mu where unconstrained), and its maximum (KL is convex in m) at a vertex
  m = l + err e_j: infinite as soon as l misses a token of p, since another vertex still misses it.

``kl`` / ``tv`` are the lower ends (the exact values when err = 0), ``kl_upper`` / ``tv_upper`` the
upper ends.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.special import rel_entr

BISECTION_STEPS = 100  # each halves the bracket of c in [0, 1]: float64 resolution after ~53


class LawBounds(NamedTuple):
    """Certified interval of KL(p || law) and TV(p, law); equal ends when the law is exact."""

    kl: float
    kl_upper: float
    tv: float
    tv_upper: float


def _kl_lower(target: np.ndarray, pruned: np.ndarray, err: float) -> float:
    """min over m >= pruned, sum m = 1 of KL(target || m): m = max(pruned, c target)."""
    support = target > 0

    def mass(c: float) -> float:
        return float(np.maximum(pruned, c * target).sum())

    low, high = 0.0, 1.0  # mass(0) = 1 - err <= 1 and mass(1) >= sum(target) = 1
    for _ in range(BISECTION_STEPS):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if mass(mid) < 1.0 else (low, mid)
    m = np.maximum(pruned, high * target)  # [V], positive wherever target is
    return float(rel_entr(target[support], m[support]).sum())


def _kl_upper(target: np.ndarray, pruned: np.ndarray, err: float) -> float:
    """max over vertices m = pruned + err e_j of KL(target || m)."""
    terms = rel_entr(target, pruned)  # [V]; inf where pruned = 0 < target
    moved = rel_entr(target, pruned + err)  # [V]: token j's term once it holds err
    if np.isinf(terms).any() and terms.size > 1:
        return float("inf")  # a vertex that fills some other token keeps this one's infinite term
    return float(terms.sum() - np.min(terms - moved))


def law_bounds(target_probs: np.ndarray, law: np.ndarray, err: float) -> LawBounds:
    """Certified KL/TV interval of a node (arrays [V] float64: target sums to 1, law to 1 - err)."""
    target = np.asarray(target_probs, np.float64)
    pruned = np.asarray(law, np.float64)
    tv = float(np.clip(pruned - target, 0.0, None).sum())
    if err <= 0:
        kl, exact_tv = float(rel_entr(target, pruned).sum()), 0.5 * float(np.abs(target - pruned).sum())
        return LawBounds(kl, kl, exact_tv, exact_tv)
    return LawBounds(_kl_lower(target, pruned, err), _kl_upper(target, pruned, err), tv, tv + err)
