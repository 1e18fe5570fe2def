"""Prompt counts for a target precision (`resispec.audit.prompt_count`): the paired ratio's half-width
from a run's records and the 1/sqrt(n) extrapolation to a 10% half-width."""

import math

import numpy as np
import pytest

from resispec.audit.prompt_count import prompts_needed, ratio_precision


def _records(rng, n: int) -> list[dict]:
    """Timing records of two methods on n prompts: the numerator accepts ~1.5x longer, noisily."""
    out = []
    for i in range(n):
        base = rng.uniform(1.5, 3.0)
        for method, scale in (("resispec", 1.5), ("specinfer", 1.0)):
            steps = [max(1, round(base * scale * rng.lognormal(0, 0.3))) for _ in range(8)]
            out.append(
                {
                    "method": method,
                    "prompt_id": f"p{i}",
                    "pass": "timing",
                    "accepted_lengths": steps,
                    "new_tokens": [0] * sum(steps),
                    "wall_s": 1.0,
                    "position_tried": [],
                    "position_accepted": [],
                    "depth_tried": [],
                    "depth_accepted": [],
                }
            )
    return out + [{**out[0], "pass": "audit"}]  # an audit-pass record is ignored


def test_prompts_needed_follows_the_square_root_law():
    assert prompts_needed(0.20, 10) == 40 and prompts_needed(0.05, 10) == 3
    assert prompts_needed(float("nan"), 10) is None and prompts_needed(0.2, 1) is None


def test_ratio_precision_from_records_shrinks_as_one_over_root_n():
    """The paired half-width from records falls as 1/sqrt(n) (what the extrapolation assumes): four
    times the prompts, half the width (within 25%)."""
    rng = np.random.default_rng(0)
    small = ratio_precision(_records(rng, 60), "resispec", "specinfer", resamples=4000)
    large = ratio_precision(_records(rng, 240), "resispec", "specinfer", resamples=4000)
    assert small.n == 60 and 1.2 < small.ratio < 1.8 and small.low < small.ratio < small.high
    assert small.relative_half_width / large.relative_half_width == pytest.approx(2.0, rel=0.25)
    assert small.prompts_needed == prompts_needed(small.relative_half_width, 60)
    assert math.isclose(small.relative_half_width, (small.high - small.low) / 2 / small.ratio)
    with pytest.raises(ValueError, match="no timing-pass records"):
        ratio_precision(_records(rng, 2), "resispec", "ers")
