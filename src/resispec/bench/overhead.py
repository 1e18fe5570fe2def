"""Where a decoding step's time goes, and the engine's speed goals, for ``bench engine`` (the
CPU default pair) and ``bench gpu`` (the paper's pair shape on a GPU).

A step's time is the sum of its five ``StepRecord`` parts (drafting, target forward, verification,
shaping, commit) plus its share of the time between steps (the loop's bookkeeping: the wall time minus
the prefill and every step's parts, spread evenly). The first step of each generation is left out: the
draft then forwards the whole prompt. The *overhead share* is (step - drafting - target forward) / step,
as a ratio of sums over the units resampled by the bootstrap (prompts, or steps of one prompt).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from resispec.verify import EXACT_METHODS as EXACT

PARTS = ("draft", "target", "verify", "shaping", "commit")
RESAMPLES, LEVEL = 2000, 0.95
# The speed goals (benchmarks, not tests): all of the form "value <= goal"
CPU_OVERHEAD_GOAL = 0.05  # CPU default pair: overhead share of every exact method on d5b3 and auto
CPU_GOAL_TREES = ("d5b3", "auto")
STEP_OVER_FORWARD_GOAL = 1.3  # GPU, 7B-shaped target: a d5b3 specinfer step over its 121-node forward
OPTIMAL_OVER_SPECINFER_GOAL = 1.10  # GPU: optimal's d5b3 step time over specinfer's


class Interval(NamedTuple):
    mean: float
    low: float
    high: float


NO_INTERVAL = Interval(float("nan"), float("nan"), float("nan"))


@dataclass
class Steps:
    """The steps of one generation after its first: ``parts`` seconds [S][5] in ``PARTS`` order and
    ``between_s``, the time between steps per step (``between_raw_s`` before clipping at 0: timing noise
    in the prefill it subtracts can make it negative)."""

    parts: list[tuple[float, ...]]
    between_s: float
    between_raw_s: float = 0.0


def steady_steps(out, prefill_s: float) -> Steps:
    """``out``: a ``GenerateOutput``; ``prefill_s``: the wall seconds of a 0-token generation of the same
    prompt (the prefill, subtracted from the wall time before the time between steps is spread)."""
    parts = [tuple(float(getattr(s, f"time_{p}_s", 0.0)) for p in PARTS) for s in out.steps]
    between = (out.wall_s - prefill_s - sum(map(sum, parts))) / max(len(parts), 1)
    return Steps(parts[1:], max(between, 0.0), between)


def step_seconds(steps: Steps) -> list[float]:
    return [sum(p) + steps.between_s for p in steps.parts]


def overhead_sums(steps: Steps) -> tuple[float, float]:
    """(sum of step - draft - target, sum of step) over the steps: one unit's share numerator, denominator."""
    total = sum(step_seconds(steps))
    return total - sum(p[0] + p[1] for p in steps.parts), total


def share_interval(numerators, denominators, *, seed: int = 0) -> Interval:
    """sum(num) / sum(den) over units with a percentile-bootstrap interval (NaN ends for one unit)."""
    num, den = np.asarray(numerators, np.float64), np.asarray(denominators, np.float64)  # [n] each
    if num.size == 0 or den.sum() <= 0:
        return NO_INTERVAL
    value = float(num.sum() / den.sum())
    if num.size < 2:
        return Interval(value, float("nan"), float("nan"))
    index = np.random.default_rng(seed).integers(0, num.size, (RESAMPLES, num.size))  # [B, n]
    low, high = np.quantile(num[index].sum(1) / den[index].sum(1), [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return Interval(value, float(low), float(high))


def ratio_interval(a, b, *, a_stat=np.mean, b_stat=np.mean, seed: int = 0) -> Interval:
    """a_stat(a) / b_stat(b) of two independent samples, each resampled on its own (percentile bootstrap)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.size == 0 or b.size == 0:
        return NO_INTERVAL
    value = float(a_stat(a) / b_stat(b))
    if a.size < 2 or b.size < 2:
        return Interval(value, float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    ratios = a_stat(a[rng.integers(0, a.size, (RESAMPLES, a.size))], axis=1) / b_stat(
        b[rng.integers(0, b.size, (RESAMPLES, b.size))], axis=1
    )  # [B]
    low, high = np.quantile(ratios, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return Interval(value, float(low), float(high))


def verdict(interval: Interval, goal: float) -> str:
    """``met`` (the whole 95% interval at most ``goal``), ``missed`` (all of it above) or ``not decided``."""
    if not np.isfinite(interval.low) or not np.isfinite(interval.high):
        return "not decided (no interval)"
    if interval.high <= goal:
        return "met"
    return "missed" if interval.low > goal else "not decided"


def goal_line(label: str, interval: Interval, goal: float, *, percent: bool = False) -> str:
    if percent:
        value = f"{100 * interval.mean:.1f}% [{100 * interval.low:.1f}, {100 * interval.high:.1f}]"
        return f"{label}: {value}; goal <= {100 * goal:.0f}%: {verdict(interval, goal)}"
    value = f"{interval.mean:.2f}x [{interval.low:.2f}, {interval.high:.2f}]"
    return f"{label}: {value}; goal <= {goal:.2f}x: {verdict(interval, goal)}"


def undecided(line: str, why_not: str | None) -> str:
    """``line`` with its verdict replaced by ``not decided (why_not)`` when the goal does not apply."""
    return line if why_not is None else line.rsplit(": ", 1)[0] + f": not decided ({why_not})"


def cpu_overhead_lines(rows: list[dict], methods: list[str], why_not: str | None = None) -> list[str]:
    """The CPU goal per exact method (every one of ``EXACT_METHODS``: the goal names them all) and tree of
    ``CPU_GOAL_TREES``, from engine rows with an ``overhead`` interval ([mean, low, high]); a configuration
    the run lacks is named with how to add it (``methods``: the run's --methods).
    ``why_not``: why this run cannot decide the goal (another pair than the default one)."""
    lines = []
    for tree in CPU_GOAL_TREES:
        for method in EXACT:
            key = (tree, method)
            match = [r for r in rows if (r.get("spec"), r.get("method")) == key and "overhead" in r]
            label = f"CPU goal, overhead share {tree} {method}"
            if not match:
                hint = f"add {method} to --methods" if method not in methods else f"add {tree} to --trees"
                lines.append(f"{label}: not run ({hint}): not decided")
                continue
            line = goal_line(label, Interval(*match[0]["overhead"]), CPU_OVERHEAD_GOAL, percent=True)
            lines.append(undecided(line, why_not))
    return lines
