"""Summary statistics (`resispec.audit.statistics`) and tidy table rows (`resispec.audit.aggregate`)."""

import math

import numpy as np
import pytest

from resispec.audit.aggregate import job_rows, node_extremes
from resispec.audit.statistics import bootstrap_ci, kl_divergence, prompt_metrics, summarise, total_variation


def _record(accepted_lengths, wall=2.0, tried=(4, 2), accepted=(2, 1)):
    tokens = sum(accepted_lengths)
    return {
        "accepted_lengths": accepted_lengths, "new_tokens": list(range(tokens)), "wall_s": wall,
        "position_tried": list(tried), "position_accepted": list(accepted),
        "depth_tried": [3, 1], "depth_accepted": [1, 0], "time_draft_s": 0.5, "time_target_s": 1.0,
        "time_verify_s": 0.25, "shaping_time_s": {"budgeting": 0.1},
    }  # fmt: skip


def test_bootstrap_interval_is_seeded_and_brackets_the_mean():
    """The percentile interval contains the mean, shrinks with n, and is reproducible by seed."""
    rng = np.random.default_rng(0)
    small, large = rng.normal(size=20), rng.normal(size=2000)
    first = bootstrap_ci(small, resamples=500, seed=3)
    assert first == bootstrap_ci(small, resamples=500, seed=3)
    assert first.low <= first.mean <= first.high
    wide = first.high - first.low
    narrow = bootstrap_ci(large, resamples=500, seed=3)
    assert narrow.high - narrow.low < wide / 4


def test_bootstrap_drops_non_finite_values_and_handles_tiny_samples():
    assert bootstrap_ci([1.0, float("nan"), 3.0], resamples=50).mean == 2.0
    assert bootstrap_ci([5.0]) == (5.0, 5.0, 5.0)
    assert all(math.isnan(v) for v in bootstrap_ci([]))


def test_kl_and_tv_match_their_definitions():
    p, q = np.array([0.5, 0.5, 0.0]), np.array([0.25, 0.5, 0.25])
    assert kl_divergence(p, q) == pytest.approx(0.5 * math.log(2))
    assert total_variation(p, q) == pytest.approx(0.25)
    assert kl_divergence(q, p) == math.inf  # the law misses a token the target can emit


def test_prompt_metrics_per_step_and_per_position():
    """Accepted length is per step, throughput per second, acceptance per sibling position."""
    values = prompt_metrics(_record([3, 1, 2]))
    assert values["accepted_length"] == pytest.approx(2.0)
    assert values["throughput"] == pytest.approx(3.0)
    assert values["position_acceptance_1"] == pytest.approx(0.5)
    assert values["depth_acceptance_2"] == 0.0
    assert values["time_target_s"] == pytest.approx(1.0 / 3)
    assert values["shaping_budgeting_s"] == pytest.approx(0.1 / 3)


def test_summarise_counts_units_with_a_value():
    rows = {r["metric"]: r for r in summarise([{"a": 1.0, "b": 2.0}, {"a": 3.0}], resamples=10, seed=0)}
    assert rows["a"]["mean"] == 2.0 and rows["a"]["n"] == 2 and rows["b"]["n"] == 1


def test_job_rows_use_certified_bounds_when_some_law_was_truncated():
    """A job with a pruned node reports the KL lower bounds and how many nodes were truncated."""
    job = {"table": "t", "row": "r", "method": "resispec", "dataset": "c4"}
    nodes = [
        {"kl": 0.2, "tv": 0.1, "kl_lower": 0.2, "tv_lower": 0.1, "acceptance": 0.9, "alpha_star": 0.8,
         "law_err": 0.0},
        {"kl": 9.0, "tv": 0.5, "kl_lower": 0.02, "tv_lower": 0.1, "acceptance": 0.7, "alpha_star": 0.6,
         "law_err": 0.01},
    ]  # fmt: skip
    rows = {r["metric"]: r for r in job_rows(job, [_record([2, 2])], nodes, {"audit": {"bootstrap": 20}})}
    assert rows["kl"]["mean"] == pytest.approx(0.11)  # lower bounds 0.2 and 0.02
    assert rows["truncated_nodes"]["mean"] == 1.0
    assert rows["accepted_length"]["mean"] == 2.0 and rows["accepted_length"]["table"] == "t"
    extremes = {r["metric"]: r["mean"] for r in node_extremes(nodes[:1])}
    assert extremes["max_excess_over_alpha_star"] == pytest.approx(0.1)
