"""How many prompts a ratio needs: the 95% half-width of a paired ratio (e.g. Table 1's accepted-length
gain, ResiSpec / SpecInfer) from a run's records, and the prompt count that brings it to a target
relative half-width, assuming the usual 1 / sqrt(n) shrinkage of a bootstrap interval."""

from __future__ import annotations

import math
from typing import NamedTuple

from resispec.audit.statistics import paired_ratio, prompt_metrics

TARGET_HALF_WIDTH = 0.10  # a verdict "agrees" needs a half-width within 10% of our value


class RatioPrecision(NamedTuple):
    """A paired ratio over ``n`` prompts, its 95% interval, its half-width relative to the ratio and
    the prompts needed for ``target`` (None when no interval could be computed)."""

    n: int
    ratio: float
    low: float
    high: float
    relative_half_width: float
    prompts_needed: int | None


def prompts_needed(relative_half_width: float, n: int, target: float = TARGET_HALF_WIDTH) -> int | None:
    """ceil(n (h / target)^2): the prompt count at which the half-width h of n prompts shrinks to target."""
    if not math.isfinite(relative_half_width) or n < 2:
        return None
    return max(2, math.ceil(n * (relative_half_width / target) ** 2))


def ratio_precision(
    records: list[dict],
    numerator: str,
    denominator: str,
    *,
    metric: str = "accepted_length",
    resamples: int = 1000,
    seed: int = 0,
    target: float = TARGET_HALF_WIDTH,
) -> RatioPrecision:
    """Paired ratio numerator / denominator of ``metric`` over one run's timing-pass records."""
    values: dict[str, dict[str, float]] = {numerator: {}, denominator: {}}
    for record in records:
        if record["method"] in values and record.get("pass", "timing") == "timing":
            values[record["method"]][record["prompt_id"]] = prompt_metrics(record)[metric]
    if not values[numerator] or not values[denominator]:
        raise ValueError(f"records: no timing-pass records of {numerator!r} and {denominator!r} to pair")
    mean, low, high = paired_ratio(values[numerator], values[denominator], resamples=resamples, seed=seed)
    n = len(set(values[numerator]) & set(values[denominator]))
    half = (high - low) / 2 / abs(mean) if mean else float("nan")
    return RatioPrecision(n, mean, low, high, half, prompts_needed(half, n, target))
