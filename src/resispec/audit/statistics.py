"""Raw per-prompt records and per-node audit rows -> summary statistics with bootstrap intervals."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy.special import rel_entr

#: Seconds per decoding step, disjoint (Figure 3's split; ``resispec.decoding.records.StepRecord``):
#: drafting, the target's tree forward, the verifier's decisions (shaping excluded), ResiSpec-style
#: shaping, and the commit (cache cuts, the drafter's update). Raw records written before the five-way
#: split have no ``time_shaping_s`` / ``time_commit_s`` and their ``time_verify_s`` includes both.
TIME_PARTS = ("time_draft_s", "time_target_s", "time_verify_s", "time_shaping_s", "time_commit_s")


class Interval(NamedTuple):
    """A mean with its interval."""

    mean: float
    low: float
    high: float


def bootstrap_ci(
    values: Sequence[float], *, resamples: int = 1000, seed: int = 0, level: float = 0.95
) -> Interval:
    """(mean, low, high): percentile bootstrap interval of the mean over `values` (e.g. prompts)."""
    data = np.asarray(values, dtype=np.float64)
    data = data[np.isfinite(data)]
    if data.size == 0:
        return Interval(float("nan"), float("nan"), float("nan"))
    if data.size == 1:
        return Interval(float(data[0]), float(data[0]), float(data[0]))
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, data.size, size=(resamples, data.size))  # [B, n]
    means = data[idx].mean(axis=1)  # [B]
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return Interval(float(data.mean()), float(low), float(high))


def paired_ratio(
    numerator: dict[str, float],
    denominator: dict[str, float],
    *,
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> Interval:
    """Ratio of sums over the prompts both methods decoded, with a paired percentile bootstrap: each
    resample draws prompts with replacement and uses the same prompts for both methods.

    ``numerator`` / ``denominator``: per-prompt values by prompt id (e.g. accepted lengths); prompts
    missing from either side or not finite are left out. The point value sum(num) / sum(den) is the
    ratio of the two methods' means over the common prompts.
    """
    common = [
        k for k in numerator if k in denominator and np.isfinite(numerator[k]) and np.isfinite(denominator[k])
    ]
    if not common:
        return Interval(float("nan"), float("nan"), float("nan"))
    num = np.array([numerator[k] for k in common], dtype=np.float64)  # [n]
    den = np.array([denominator[k] for k in common], dtype=np.float64)  # [n]
    return ratio_of_sums(num, den, resamples=resamples, seed=seed, level=level)


def ratio_of_sums(num: np.ndarray, den: np.ndarray, *, resamples: int, seed: int, level: float) -> Interval:
    """sum(num) / sum(den) [n] with a percentile bootstrap resampling the n units (no interval for one)."""
    ratio = float(num.sum() / den.sum())
    if len(num) == 1:
        return Interval(ratio, float("nan"), float("nan"))
    idx = np.random.default_rng(seed).integers(0, len(num), size=(resamples, len(num)))  # [B, n]
    ratios = num[idx].sum(axis=1) / den[idx].sum(axis=1)  # [B]
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(ratios, [tail, 1.0 - tail])
    return Interval(ratio, float(low), float(high))


def cluster_bootstrap(
    values: Sequence[float],
    clusters: Sequence[str],
    *,
    resamples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> Interval:
    """Mean over units (e.g. audited nodes) with a bootstrap that resamples whole clusters (their
    prompts): each resample draws clusters with replacement and averages all their units (ratio of
    the resampled sums to the resampled counts). Units with non-finite values are left out."""
    data = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(data)
    data, labels = data[keep], np.asarray(list(clusters), dtype=object)[keep]
    if data.size == 0:
        return Interval(float("nan"), float("nan"), float("nan"))
    names, index = np.unique(labels.astype(str), return_inverse=True)
    sums = np.bincount(index, weights=data, minlength=len(names))  # [C]
    counts = np.bincount(index, minlength=len(names)).astype(np.float64)  # [C]
    return ratio_of_sums(sums, counts, resamples=resamples, seed=seed, level=level)


def kl_divergence(target_probs: np.ndarray, law: np.ndarray) -> float:
    """KL(target || law) in nats (scipy's rel_entr; +inf where law is 0 and target is not)."""
    return float(rel_entr(np.asarray(target_probs, np.float64), np.asarray(law, np.float64)).sum())


def total_variation(target_probs: np.ndarray, law: np.ndarray) -> float:
    return 0.5 * float(np.abs(np.asarray(target_probs, np.float64) - np.asarray(law, np.float64)).sum())


def prompt_metrics(record: dict) -> dict[str, float]:
    """Per-prompt values of every record metric (the unit the bootstrap resamples)."""
    steps = max(len(record["accepted_lengths"]), 1)
    tokens = len(record["new_tokens"])
    wall = record.get("wall_s") or float("nan")
    values = {
        "accepted_length": float(np.mean(record["accepted_lengths"])) if record["accepted_lengths"] else 0.0,
        "throughput": tokens / wall if wall and wall > 0 else float("nan"),
        "steps": float(steps),
        "new_tokens": float(tokens),
        "time_step_s": wall / steps,
    }
    for key in TIME_PARTS:  # absent from a record (written before the split): absent here, not 0
        if key in record:
            values[key] = record[key] / steps
    for key, total in record.get("shaping_time_s", {}).items():
        values[f"shaping_{key}_s"] = total / steps
    for i, (tried, accepted) in enumerate(
        zip(record["position_tried"], record["position_accepted"], strict=True), 1
    ):
        values[f"position_acceptance_{i}"] = accepted / tried if tried else float("nan")
    for d, (tried, accepted) in enumerate(
        zip(record["depth_tried"], record["depth_accepted"], strict=True), 1
    ):
        values[f"depth_acceptance_{d}"] = accepted / tried if tried else float("nan")
    values.update(level_metrics(record))
    return values


def level_metrics(record: dict) -> dict[str, float]:
    """Accepted length without the bonus token (``accepted_length_no_bonus``: accepted drafted tokens
    per step; ``accepted_length`` counts the residual or bonus token too) and ``level_acceptance_{d}``,
    the share of steps that accept drafted level d (unconditional, unlike ``depth_acceptance_{d}``,
    which is conditional on level d being verified). Their sum over d equals ``accepted_length_no_bonus``
    unless the last step was cut at EOS or max_new_tokens (the shares count the verifier's decisions)."""
    lengths = record["accepted_lengths"]
    if not lengths:
        return {}
    values = {"accepted_length_no_bonus": float(np.mean(lengths)) - 1.0}
    for d, accepted in enumerate(record["depth_accepted"], 1):
        values[f"level_acceptance_{d}"] = accepted / len(lengths)
    return values


def summarise(per_unit: Sequence[dict[str, float]], *, resamples: int, seed: int) -> list[dict]:
    """One row per metric: mean, 95% bootstrap interval and the number of units with a value."""
    metrics = sorted({key for unit in per_unit for key in unit})
    rows = []
    for metric in metrics:
        values = [unit[metric] for unit in per_unit if metric in unit and np.isfinite(unit[metric])]
        mean, low, high = bootstrap_ci(values, resamples=resamples, seed=seed)
        rows.append({"metric": metric, "mean": mean, "ci_low": low, "ci_high": high, "n": len(values)})
    return rows
