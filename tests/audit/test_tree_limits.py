"""The paper-limits audit (audit/tree_limits.py): the largest tree length an exact verifier can reach
given a chain's length, against closed forms on small cases and against sampled joint laws."""

import numpy as np
import pytest

from resispec.audit.tree_limits import (
    chain_length,
    envelope_limit,
    same_acceptance_limit,
    tree_length,
    tree_limit,
    upper_hull,
)
from resispec.verify import alpha_star_upper_from_beta

TOL = 0.01


def check_encloses(chain_eal, levels, tree_levels, k, expected):
    low, high, _ = envelope_limit(chain_eal, levels, tree_levels, k, tolerance=TOL)
    assert low <= expected + 1e-9 and expected <= high, (low, expected, high)
    assert high - low <= TOL


@pytest.mark.parametrize("chain_eal", [1.0, 1.2, 1.5, 1.89, 2.0])
@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_one_level_is_f_itself(chain_eal, k):
    """L = 1, one tree level: t = 1 + f(c - 1), concave, so the envelope is the function itself."""
    expected = 1.0 + alpha_star_upper_from_beta(chain_eal - 1.0, k)
    check_encloses(chain_eal, 1, 1, k, expected)
    assert same_acceptance_limit(chain_eal, 1, 1, k)[1] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("chain_eal", [1.1, 1.5, 1.9])
def test_one_level_and_one_free_level(chain_eal):
    """L = 1, two tree levels (the second unconstrained): t = 1 + 2 f(c - 1)."""
    check_encloses(chain_eal, 1, 2, 3, 1.0 + 2.0 * alpha_star_upper_from_beta(chain_eal - 1.0, 3))


@pytest.mark.parametrize("chain_eal", [1.0, 1.7, 2.5, 3.0, 4.0])
def test_single_candidate_tree_of_the_chain_depth_is_the_chain(chain_eal):
    """k = 1, same depth: f(b) = b, so t = c for every law."""
    check_encloses(chain_eal, 3, 3, 1, chain_eal)
    assert same_acceptance_limit(chain_eal, 3, 3, 1)[1] == pytest.approx(chain_eal, abs=1e-9)


@pytest.mark.parametrize("chain_eal", [1.2, 1.89, 2.6, 3.0])
def test_single_candidate_tree_one_level_deeper(chain_eal):
    """k = 1, L = 2, three tree levels: t = c + b1 b2 <= c + (c - 1) / 2 (b2 = 1 attains it)."""
    check_encloses(chain_eal, 2, 3, 1, (3.0 * chain_eal - 1.0) / 2.0)


@pytest.mark.parametrize("chain_eal", [1.3, 1.9, 2.2, 2.8])
def test_tree_shallower_than_the_chain(chain_eal):
    """k = 1, L = 2, one tree level: t = 1 + b1 with b1 <= c - 1 (b2 = 0): min(c, 2)."""
    check_encloses(chain_eal, 2, 1, 1, min(chain_eal, 2.0))


def test_the_issues_numbers_for_table5_and_d5b3():
    """Table 5's EAL 1.89 against d5b3 (4 candidate levels, k = 3): about 4.33 when 'depth 4' means 3
    candidate levels, about 4.14 when it means 4 (issue 20)."""
    three, four = tree_limit(1.89, 3, 4, 3), tree_limit(1.89, 4, 4, 3)
    assert three.envelope_low <= 4.33 + 0.005 and three.envelope_high >= 4.325
    assert four.envelope_low <= 4.14 and four.envelope_high >= 4.135
    assert three.envelope_high < 4.68 and four.envelope_high < 4.68
    assert three.same_level_limit <= three.envelope_low  # (a) is one joint law among all


@pytest.mark.parametrize("levels,tree_levels,k", [(2, 2, 3), (2, 3, 3), (3, 4, 3), (3, 2, 2)])
def test_upper_value_majorises_sampled_joint_laws(levels, tree_levels, k):
    """Random per-level acceptance vectors: the concave hull of their (c, t) points, which mixtures of
    them attain, never exceeds the upper value, and the lower value is no less than that hull by more
    than the tolerance."""
    rng = np.random.default_rng(levels * 10 + tree_levels)
    per_level = np.concatenate([rng.uniform(size=(20_000, levels)), rng.beta(0.3, 0.3, (20_000, levels))])
    c, t = chain_length(per_level), tree_length(per_level, levels, tree_levels, k)
    order = np.argsort(c)
    hull = upper_hull(c[order], t[order])
    for chain_eal in np.linspace(1.05, levels + 0.95, 7):
        sampled = float(np.interp(chain_eal, c[order], hull))
        low, high, _ = envelope_limit(float(chain_eal), levels, tree_levels, k)
        assert sampled <= high
        assert low >= sampled - TOL


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="chain_eal must lie in"):
        tree_limit(4.5, 3, 4, 3)
    with pytest.raises(ValueError, match="chain_levels must be"):
        tree_limit(1.5, 0, 4, 3)
    with pytest.raises(ValueError, match="k must be"):
        tree_limit(1.5, 3, 4, 0)
    with pytest.raises(ValueError, match="tolerance must be"):
        envelope_limit(1.5, 3, 4, 3, tolerance=0)
