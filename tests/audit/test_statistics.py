"""Summary statistics (`resispec.audit.statistics`) and tidy table rows (`resispec.audit.aggregate`)."""

import math

import numpy as np
import pytest

from resispec.audit.aggregate import job_rows, node_extremes
from resispec.audit.statistics import (
    bootstrap_ci,
    cluster_bootstrap,
    kl_divergence,
    paired_ratio,
    prompt_metrics,
    summarise,
    total_variation,
)


def _record(accepted_lengths, wall=2.0, tried=(4, 2), accepted=(2, 1)):
    tokens = sum(accepted_lengths)
    return {
        "accepted_lengths": accepted_lengths,
        "new_tokens": list(range(tokens)),
        "wall_s": wall,
        "position_tried": list(tried),
        "position_accepted": list(accepted),
        "depth_tried": [3, 1],
        "depth_accepted": [1, 0],
        "time_draft_s": 0.5,
        "time_target_s": 1.0,
        "time_verify_s": 0.25,
        "shaping_time_s": {"budgeting": 0.1},
    }


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


def test_prompt_metrics_carry_the_five_disjoint_times_and_leave_old_records_without_them():
    """Figure 3's five parts per step; a record written before the split (no time_shaping_s /
    time_commit_s) still aggregates: those metrics are absent for it, not zero."""
    new = dict(_record([2, 2]), time_shaping_s=0.1, time_commit_s=0.3)
    values = prompt_metrics(new)
    assert values["time_shaping_s"] == pytest.approx(0.05) and values["time_commit_s"] == pytest.approx(0.15)
    assert values["time_verify_s"] == pytest.approx(0.125)
    old = prompt_metrics(_record([2, 2]))
    assert "time_commit_s" not in old and "time_shaping_s" not in old and old["time_verify_s"] == 0.125
    job = {"table": "t", "row": "r", "method": "resispec"}
    rows = {r["metric"]: r for r in job_rows(job, [new, _record([3])], [], {"audit": {"bootstrap": 20}})}
    assert rows["time_commit_s"]["n"] == 1 and rows["time_commit_s"]["mean"] == pytest.approx(0.15)
    assert rows["time_draft_s"]["n"] == 2


def test_accepted_length_without_the_bonus_token_and_per_level_acceptance():
    """Three steps on a tree with 3 drafted levels accept 2, 0 and 1 drafted tokens (+ 1 emitted each):
    level 1 is accepted in 2 of 3 steps, level 2 in 1, level 3 in none; the shares sum to the length
    without the bonus token, and the conditional depth acceptance differs from the share."""
    record = {**_record([3, 1, 2]), "depth_tried": [3, 2, 1], "depth_accepted": [2, 1, 0]}
    values = prompt_metrics(record)
    assert values["accepted_length"] == pytest.approx(2.0)
    assert values["accepted_length_no_bonus"] == pytest.approx(1.0)
    shares = [values[f"level_acceptance_{d}"] for d in (1, 2, 3)]
    assert shares == pytest.approx([2 / 3, 1 / 3, 0.0])
    assert sum(shares) == pytest.approx(values["accepted_length_no_bonus"])
    assert values["depth_acceptance_2"] == pytest.approx(1 / 2)  # conditional on level 2 being tried
    baseline = prompt_metrics(
        {
            **_record([1, 1]),
            "depth_tried": [],
            "depth_accepted": [],
            "position_tried": [],
            "position_accepted": [],
        }
    )
    assert baseline["accepted_length_no_bonus"] == 0.0
    assert not any(key.startswith("level_acceptance") for key in baseline)


def test_summarise_counts_units_with_a_value():
    rows = {r["metric"]: r for r in summarise([{"a": 1.0, "b": 2.0}, {"a": 3.0}], resamples=10, seed=0)}
    assert rows["a"]["mean"] == 2.0 and rows["a"]["n"] == 2 and rows["b"]["n"] == 1


def test_paired_ratio_is_a_ratio_of_sums_and_pairs_the_prompts():
    """Point value sum(num) / sum(den) over common prompts; pairing removes the shared prompt effect."""
    rng = np.random.default_rng(0)
    difficulty = rng.lognormal(0.0, 0.8, size=40)  # per prompt, shared by both methods
    num = {f"p{i}": 1.3 * d * rng.lognormal(0, 0.02) for i, d in enumerate(difficulty)}
    den = {f"p{i}": d * rng.lognormal(0, 0.02) for i, d in enumerate(difficulty)}
    den["extra"] = 100.0  # not decoded by the numerator: left out
    paired = paired_ratio(num, den, resamples=2000, seed=1)
    common = [k for k in num if k in den]
    assert paired.mean == pytest.approx(sum(num[k] for k in common) / sum(den[k] for k in common))
    assert paired.low < paired.mean < paired.high and paired.high - paired.low < 0.03
    unpaired = {k: v for k, v in zip(num, np.roll(list(num.values()), 7), strict=True)}  # prompts shuffled
    shuffled = paired_ratio(unpaired, den, resamples=2000, seed=1)
    assert shuffled.high - shuffled.low > 10 * (paired.high - paired.low)
    assert paired == paired_ratio(num, den, resamples=2000, seed=1)
    one = paired_ratio({"a": 2.0}, {"a": 1.0})
    assert one.mean == 2.0 and math.isnan(one.low) and math.isnan(one.high)  # no interval from one prompt


def test_cluster_bootstrap_resamples_whole_prompts():
    """Nodes of one prompt move together: the clustered interval is wider than the node-level one."""
    rng = np.random.default_rng(2)
    prompt_effect = rng.normal(size=10)
    values = [prompt_effect[i % 10] + 0.01 * rng.normal() for i in range(200)]
    clusters = [f"p{i % 10}" for i in range(200)]
    clustered = cluster_bootstrap(values, clusters, resamples=2000, seed=0)
    naive = bootstrap_ci(values, resamples=2000, seed=0)
    assert clustered.mean == pytest.approx(np.mean(values))
    assert clustered.high - clustered.low > 3 * (naive.high - naive.low)
    single = cluster_bootstrap([1.0, 2.0], ["a", "a"])
    assert single.mean == 1.5 and math.isnan(single.low)


def _node(kl, upper, law_err, prompt, scope="full", acceptance=0.7, alpha=0.8):
    return {
        "method": "resispec",
        "scope": scope,
        "prompt_id": prompt,
        "kl": kl,
        "kl_upper": upper,
        "tv": kl / 2,
        "tv_upper": upper / 2,
        "acceptance": acceptance,
        "alpha_star": alpha,
        "law_err": law_err,
    }


def test_job_rows_report_the_full_vocabulary_kl_with_its_certified_ends():
    """kl/kl_upper come from the full-vocabulary rows (lumped ones are suffixed), truncations counted."""
    job = {"table": "t", "row": "r", "method": "resispec", "dataset": "c4"}
    nodes = [_node(0.2, 0.2, 0.0, "a"), _node(0.02, 0.5, 0.01, "b"), _node(7.0, 7.0, 0.0, "a", "lumped")]
    rows = {r["metric"]: r for r in job_rows(job, [_record([2, 2])], nodes, {"audit": {"bootstrap": 20}})}
    assert rows["kl"]["mean"] == pytest.approx(0.11) and rows["kl_upper"]["mean"] == pytest.approx(0.35)
    assert rows["kl"]["n"] == 2 and rows["kl_lumped"]["mean"] == 7.0
    assert rows["truncated_nodes"]["mean"] == 1.0 and rows["truncated_nodes_lumped"]["mean"] == 0.0
    assert rows["accepted_length"]["mean"] == 2.0 and rows["accepted_length"]["table"] == "t"
    extremes = {r["metric"]: r["mean"] for r in node_extremes(nodes[:1])}
    assert extremes["max_excess_over_alpha_star"] == pytest.approx(-0.1)


def _timed(method, prompt, lengths, wall):
    record = _record(lengths, wall=wall)
    record.update(method=method, prompt_id=prompt, **{"pass": "timing"})
    return record


def test_ratio_rows_pair_every_other_method_of_the_run():
    """speedup_vs_{m} and accepted_length_gain_vs_{m} per other method; no length gain over autoregressive,
    no ratios for the autoregressive job itself."""
    run = [_timed("resispec", p, [3, 3], 1.0) for p in ("a", "b")]
    run += [_timed("specinfer", p, [2, 2], 1.0) for p in ("a", "b")]
    run += [_timed("autoregressive", p, [1] * 6, 3.0) for p in ("a", "b")]
    job = {"table": "t", "row": "r", "method": "resispec"}
    mine = run[:2]
    rows = {r["metric"]: r for r in job_rows(job, mine, [], {"audit": {"bootstrap": 20}}, run_records=run)}
    assert rows["speedup_vs_specinfer"]["mean"] == pytest.approx(1.5)
    assert rows["accepted_length_gain_vs_specinfer"]["mean"] == pytest.approx(1.5)
    assert (
        rows["speedup_vs_autoregressive"]["mean"] == pytest.approx(3.0)
        and rows["speedup_vs_autoregressive"]["n"] == 2
    )
    assert "accepted_length_gain_vs_autoregressive" not in rows
    ar = job_rows({**job, "method": "autoregressive"}, run[4:], [], {}, run_records=run)
    assert not any("_vs_" in r["metric"] for r in ar)
