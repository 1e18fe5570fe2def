"""``optimal`` against its oracles: the LP over all ordered candidate tuples (the test of record), the
exact law by enumeration of every tuple, alpha*, and the benchmark pairs at V = 32,000."""

import numpy as np
import pytest
import torch
from optimal_cases import EDGE_CASES, as_pair, enumerated_law, lp_acceptance, small_cases

from resispec.bench.pairs import synthetic_pairs
from resispec.verify import (
    EXACT_METHODS,
    METHODS,
    acceptance_rate,
    alpha_star,
    evaluate,
    get_verifier,
    output_law,
)
from resispec.verify.optimal.law import build_plan, two_step_law

LAW_TOL = 1e-12  # exact laws in float64
ACCEPT_TOL = 1e-9  # acceptances against the LP optimum (HiGHS at 1e-10 feasibility) and alpha*


def check_against_lp(target, draft, k):
    result = evaluate("optimal", target, draft, k)
    assert torch.allclose(result.law, target, rtol=0, atol=LAW_TOL)
    assert result.err == 0
    optimum = lp_acceptance(target.numpy(), draft.numpy(), k)
    assert result.acceptance == pytest.approx(optimum, abs=ACCEPT_TOL)
    assert result.acceptance == pytest.approx(alpha_star(target, draft, k), abs=ACCEPT_TOL)


def test_optimal_attains_the_lp_optimum_on_320_random_cases():
    """Law == p to 1e-12, acceptance == LP optimum == alpha* to 1e-9; V 2..7, k 1..4, four case kinds."""
    for target, draft, k in small_cases(seed=21, count=320):
        check_against_lp(target, draft, k)


@pytest.mark.parametrize("case", range(len(EDGE_CASES)))
def test_optimal_attains_the_lp_optimum_on_edge_cases(case):
    target, draft, k = EDGE_CASES[case]
    check_against_lp(*as_pair(target, draft), k)


def check_enumerated(target, draft, k):
    plan = build_plan(target, draft, k)
    node = two_step_law(target, plan.selection)
    residual = (
        (node.residual / node.residual.sum()).numpy() if node.residual.sum() > 0 else 0 * target.numpy()
    )
    selected, law, acceptance = enumerated_law(plan, node.accept.numpy(), residual, draft.numpy(), k)
    assert np.abs(selected - plan.selection.numpy()).max() < LAW_TOL
    assert np.abs(law - target.numpy()).max() < LAW_TOL
    assert acceptance == pytest.approx(alpha_star(target, draft, k), abs=LAW_TOL)


def test_selection_law_is_the_law_of_the_key_rule_on_120_random_cases():
    """Summing every ordered tuple's exact conditional law (selection by smallest key, keys from the
    plan's piecewise-uniform laws, rebuilt from lam alone): the selected token has the plan's r, the
    output is p and the acceptance alpha*, all to 1e-12. This is what makes the two-step law exact."""
    for target, draft, k in small_cases(seed=22, count=120, vocab_range=(2, 6), k_range=(2, 4)):
        check_enumerated(target, draft, k)


@pytest.mark.parametrize("case", range(len(EDGE_CASES)))
def test_selection_law_is_the_law_of_the_key_rule_on_edge_cases(case):
    target, draft, k = EDGE_CASES[case]
    check_enumerated(*as_pair(target, draft), k)


def test_random_cases_exercise_segments_with_groups():
    """The cases above reach the stick-breaking plan (segments with several groups), not just priority."""
    plans = [
        build_plan(t, d, k) for t, d, k in small_cases(seed=22, count=120, vocab_range=(2, 6), k_range=(2, 4))
    ]
    with_groups = [p for p in plans if any(seg.mass.numel() > 1 for seg in p.groups.values())]
    assert len(with_groups) >= 20


@pytest.mark.parametrize("k", [2, 3, 5, 11])
def test_bench_pairs_at_32000_tokens(k):
    """The benchmark's Zipf-like pairs (V = 32,000): acceptance == alpha* to 1e-9, law error < 1e-12."""
    for target, draft in synthetic_pairs(32000, 4, seed=0):
        result = evaluate("optimal", target, draft, k)
        assert float((result.law - target).abs().max()) < LAW_TOL
        assert result.acceptance == pytest.approx(alpha_star(target, draft, k), abs=ACCEPT_TOL)
        assert result.acceptance >= evaluate("ers", target, draft, k).acceptance - 1e-12


def test_planning_is_float64_whatever_the_input_dtype():
    """Half-precision inputs are planned in float64: same acceptance as the float64 inputs they round to."""
    target, draft = synthetic_pairs(2000, 1, seed=3)[0]
    rounded = target.to(torch.bfloat16), draft.to(torch.bfloat16)
    low = evaluate("optimal", *rounded, 3)
    assert low.law.dtype == torch.float64
    expected = alpha_star(*(x.double() / x.double().sum() for x in rounded), 3)
    assert low.acceptance == pytest.approx(expected, abs=ACCEPT_TOL)


def test_registered_as_exact_with_replacement():
    assert "optimal" in METHODS and "optimal" in EXACT_METHODS
    assert get_verifier("optimal").draws == "with_replacement"
    target, draft = as_pair([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])
    assert acceptance_rate("optimal", target, draft, 2, replacement=True) == pytest.approx(
        alpha_star(target, draft, 2), abs=1e-12
    )


def test_options_and_replacement_errors():
    target, draft = as_pair([0.5, 0.5], [0.5, 0.5])
    with pytest.raises(ValueError, match="optimal takes no options"):
        output_law("optimal", target, draft, 1, bins=4)
    with pytest.raises(ValueError, match="optimal.*replacement=False"):
        output_law("optimal", target, draft, 1, replacement=False)
    with pytest.raises(ValueError, match="must be 1-D"):
        output_law("optimal", target[None], draft[None], 1)
    with pytest.raises(ValueError, match="unknown optimal options"):
        get_verifier("optimal", bins=4)
