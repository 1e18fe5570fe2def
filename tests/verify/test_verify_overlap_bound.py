"""The lemma alpha*(p, q, k) <= f_k(beta), beta = sum_v min(p, q) (verify.alpha_star_upper_from_beta):
against alpha* on 10,000 seeded random pairs, against the LP over every exact verifier (optimal_cases),
its cases of equality, and the shape the tree audit relies on (non-decreasing, concave)."""

import numpy as np
import pytest
import torch
from optimal_cases import as_pair, lp_acceptance, small_cases
from verify_cases import random_cases

from resispec.verify import alpha_star, alpha_star_upper_from_beta

TOL = 1e-12  # float64 sums over at most 64 tokens


def overlap(target: torch.Tensor, draft: torch.Tensor) -> float:
    return float(torch.minimum(target, draft).sum())


def two_token_equality_case(beta: float, k: int):
    """The pair attaining f_k(beta): q = (s, 1 - s), p = (s - (1 - beta), 2 - beta - s), s the maximiser."""
    peak = k ** (-1.0 / (k - 1)) if k > 1 else 1.0
    s = max(1.0 - beta, peak)
    return as_pair([s - (1.0 - beta), 2.0 - beta - s], [s, 1.0 - s])


def test_no_violation_against_alpha_star_on_10000_random_pairs():
    """0 violations on 5,000 Dirichlet pairs (V 2..64, k 1..11) and 5,000 with zeros and ties (V 2..7)."""
    cases = list(random_cases(seed=20, count=5000)) + list(small_cases(seed=21, count=5000, k_range=(1, 8)))
    gaps = np.array([alpha_star_upper_from_beta(overlap(t, d), k) - alpha_star(t, d, k) for t, d, k in cases])
    assert len(cases) == 10_000
    assert (gaps < -TOL).sum() == 0, f"violations: {(gaps < -TOL).sum()}, worst {gaps.min():.3e}"
    assert gaps.min() < 1e-3  # the bound is nearly met by some random pairs, so the test can fail


def check_lp_cases(count: int, seed: int) -> None:
    """The LP over couplings of the tuple law q^k with p (every exact verifier, not only sequential ones)
    never accepts more than f_k(beta): ``count`` pairs, V 2..4, k 1..3, zeros and ties included."""
    violations, closest = 0, np.inf
    for target, draft, k in small_cases(seed=seed, count=count, vocab_range=(2, 4), k_range=(1, 3)):
        optimum = lp_acceptance(target.numpy(), draft.numpy(), k)
        gap = alpha_star_upper_from_beta(overlap(target, draft), k) - optimum
        violations += gap < -1e-8  # HiGHS certifies to ~1e-9 (optimal_cases.LP_TOLERANCE)
        closest = min(closest, gap)
    assert violations == 0
    assert closest < 1e-3


def test_no_violation_against_the_lp_over_every_exact_verifier_on_1000_pairs():
    check_lp_cases(1000, seed=23)


@pytest.mark.slow  # ~1 min: 10,000 HiGHS solves
def test_no_violation_against_the_lp_over_every_exact_verifier_on_10000_pairs():
    check_lp_cases(10_000, seed=22)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 8, 11])
def test_two_token_pairs_attain_the_bound(k):
    """Equality for every beta on a grid: the bound is the largest alpha* given beta, not just a bound."""
    for beta in np.linspace(0.0, 1.0, 41):
        target, draft = two_token_equality_case(float(beta), k)
        assert overlap(target, draft) == pytest.approx(beta, abs=TOL)
        expected = alpha_star_upper_from_beta(overlap(target, draft), k)
        assert alpha_star(target, draft, k) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("beta", [0.1, 0.35, 0.6])
def test_equality_cases_against_the_lp(beta):
    for k in (2, 3):
        target, draft = two_token_equality_case(beta, k)
        optimum = lp_acceptance(target.numpy(), draft.numpy(), k)
        assert optimum == pytest.approx(alpha_star_upper_from_beta(beta, k), abs=1e-8)


def test_closed_forms_and_shape():
    beta = np.linspace(0.0, 1.0, 2001)
    assert np.array_equal(alpha_star_upper_from_beta(beta, 1), beta)
    for k in (2, 3, 5, 11):
        values = alpha_star_upper_from_beta(beta, k)
        peak = k ** (-1.0 / (k - 1))
        low = beta <= 1 - peak
        np.testing.assert_allclose(values[low], 1 - (1 - beta[low]) ** k, atol=TOL)
        assert np.all(np.diff(values) >= -TOL)  # non-decreasing
        assert np.all(np.diff(values, 2) <= 1e-12)  # concave
        assert values[0] == 0.0 and values[-1] == 1.0
        assert np.all(values >= 1 - (1 - beta) ** k - TOL)
    assert alpha_star_upper_from_beta(0.3, 3) == pytest.approx(1 - 0.7**3, abs=TOL)
    assert isinstance(alpha_star_upper_from_beta(0.5, 2), float)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_bad_overlap_is_named(bad):
    with pytest.raises(ValueError, match="overlap must lie in"):
        alpha_star_upper_from_beta(bad, 3)


def test_bad_num_candidates_is_named():
    with pytest.raises(ValueError, match="num_candidates"):
        alpha_star_upper_from_beta(0.5, 0)
