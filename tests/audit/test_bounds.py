"""Certified KL/TV intervals from a pruned law (`resispec.audit.bounds`): they contain KL(p || m) and
TV(p, m) of every law m the pruning allows, and their ends are attained (tight)."""

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import rel_entr

from resispec.audit.bounds import law_bounds

TOL = 1e-12  # float64 sums over at most 64 terms


def _case(rng, vocab: int, err: float, zeros: int = 0):
    """(p, true law m, pruned l): l = m minus ``err`` of mass taken from random tokens."""
    p = rng.dirichlet(np.ones(vocab))
    m = rng.dirichlet(np.ones(vocab))
    take = rng.dirichlet(np.ones(vocab)) * err
    take = np.minimum(take, m)
    pruned = m - take
    if zeros:
        pruned[rng.choice(vocab, zeros, replace=False)] = 0.0
    return p, m, pruned, float(m.sum() - pruned.sum())


@pytest.mark.parametrize("seed", range(40))
def test_intervals_contain_the_true_law(seed):
    """For random (p, m) and pruned mass, KL and TV of the true law lie in the certified intervals."""
    rng = np.random.default_rng(seed)
    p, m, pruned, err = _case(rng, vocab=int(rng.integers(2, 64)), err=float(rng.uniform(1e-4, 0.3)))
    bounds = law_bounds(p, pruned, err)
    kl, tv = float(rel_entr(p, m).sum()), 0.5 * float(np.abs(p - m).sum())
    assert bounds.kl - TOL <= kl <= bounds.kl_upper + TOL
    assert bounds.tv - TOL <= tv <= bounds.tv_upper + TOL


def test_ends_are_attained():
    """The lower KL end is KL(p || max(l, c p)) for the feasible c; the upper end a vertex l + err e_j."""
    rng = np.random.default_rng(5)
    p, pruned, err = rng.dirichlet(np.ones(10)), 0.8 * rng.dirichlet(np.ones(10)), 0.2
    bounds = law_bounds(p, pruned, err)
    vertices = [pruned + err * np.eye(10)[j] for j in range(10)]
    assert bounds.kl_upper == pytest.approx(max(float(rel_entr(p, v).sum()) for v in vertices), abs=TOL)
    oracle = minimize(  # an independent solver: min KL(p || m) over m >= l, sum m = 1
        lambda m: float(rel_entr(p, m).sum()),
        pruned + err / 10,
        method="SLSQP",
        bounds=[(lo, 1.0) for lo in pruned],
        constraints=[{"type": "eq", "fun": lambda m: m.sum() - 1}],
        options={"ftol": 1e-14, "maxiter": 500},
    )
    assert oracle.success and oracle.fun == pytest.approx(bounds.kl, abs=1e-8)
    assert max(float(np.clip(v - p, 0, None).sum()) for v in vertices) == pytest.approx(
        bounds.tv_upper, abs=TOL
    )


def test_exact_law_gives_equal_ends_and_zeros_give_infinity():
    rng = np.random.default_rng(1)
    p, m, _, _ = _case(rng, vocab=8, err=0.0)
    exact = law_bounds(p, m, 0.0)
    assert exact.kl == exact.kl_upper == pytest.approx(float(rel_entr(p, m).sum()), abs=TOL)
    assert exact.tv == exact.tv_upper == pytest.approx(0.5 * float(np.abs(p - m).sum()), abs=TOL)
    p, _, pruned, err = _case(rng, vocab=8, err=0.1, zeros=1)  # a token of p with no mass in l
    assert law_bounds(p, pruned, err).kl_upper == np.inf  # the vertices filling other tokens miss it
    assert np.isfinite(law_bounds(p, pruned, err).kl)
