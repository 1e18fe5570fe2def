"""Paired ratios for benchmarks: both systems ran the same prompts, so the bootstrap resamples prompts
once for both (ratio of sums), which the independent-samples delta method would not respect."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

RESAMPLES = 2000


class Ratio(NamedTuple):
    value: float
    low: float
    high: float


def paired_ratio(tokens_a, seconds_a, tokens_b, seconds_b, *, seed: int = 0, level: float = 0.95) -> Ratio:
    """Throughput ratio a / b = (sum tokens_a / sum seconds_a) / (sum tokens_b / sum seconds_b) over
    prompts, with a paired percentile-bootstrap interval (the same resampled prompts for a and b)."""
    arrays = [np.asarray(x, dtype=np.float64) for x in (tokens_a, seconds_a, tokens_b, seconds_b)]
    if len({len(x) for x in arrays}) != 1 or not len(arrays[0]):
        raise ValueError(
            f"paired_ratio needs equal, non-empty per-prompt lists, got {[len(x) for x in arrays]}"
        )

    def ratio(index):
        ta, sa, tb, sb = (x[index].sum(-1) for x in arrays)
        return (ta / sa) / (tb / sb)

    n = len(arrays[0])
    value = float(ratio(np.arange(n)))
    draws = np.random.default_rng(seed).integers(0, n, size=(RESAMPLES, n))  # [B, n]
    tail = (1 - level) / 2
    low, high = np.quantile(ratio(draws), [tail, 1 - tail])
    return Ratio(value, float(low), float(high))
