"""Verdicts of computed paper cells: ``agrees`` when the paper value lies inside our 95% interval
and that interval's half-width is at most ``HALF_WIDTH_LIMIT`` of our value; ``disagrees`` when it lies
outside; ``inconclusive`` otherwise (a wider or missing interval, or one from fewer than ``MIN_PROMPTS``
prompts). KL cells compare levels: ``agrees`` when both are at floating-point level (the 95% interval of
our certified upper end below ``FP_KL_LEVEL``) or both above it, ``disagrees`` when ours is certainly
above and the paper's below (or the reverse)."""

from __future__ import annotations

import numpy as np

FP_KL_LEVEL = 1e-8  #: KL below this is "floating-point level" (the paper's Table 4 values are ~1e-10-1e-9)
HALF_WIDTH_LIMIT = 0.10  #: an "agrees" needs a 95% half-width within 10% of our value
VERDICTS = ("agrees", "disagrees", "inconclusive")
MIN_PROMPTS = 2  #: a bootstrap over one prompt gives a zero-width interval, which says nothing about spread


def _finite(*values) -> bool:
    return all(v is not None and np.isfinite(float(v)) for v in values)


def verdict(cell: dict, row: dict) -> str:
    """``agrees`` / ``disagrees`` / ``inconclusive`` for one computed cell (module docstring)."""
    value, ours, low, high = cell["value"], row["ours"], row["ours_low"], row["ours_high"]
    if cell["metric"] == "kl":
        upper = row.get("ours_upper_high", high)
        paper_fp = value < FP_KL_LEVEL
        if _finite(upper) and upper < FP_KL_LEVEL:
            return "agrees" if paper_fp else "disagrees"
        if _finite(low) and low >= FP_KL_LEVEL:
            return "disagrees" if paper_fp else "agrees"
        return "inconclusive"
    if not _finite(low, high) or (_finite(row.get("n")) and row["n"] < MIN_PROMPTS):
        return "inconclusive"
    if not low <= value <= high:
        return "disagrees"
    return "agrees" if (high - low) / 2 <= HALF_WIDTH_LIMIT * abs(ours) else "inconclusive"
