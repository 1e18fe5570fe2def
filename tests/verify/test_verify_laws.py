"""Exact laws, acceptance, the alpha* bound and input validation of resispec.verify."""

import itertools

import numpy as np
import pytest
import torch
from verify_cases import random_cases

from resispec.verify import (
    METHODS,
    acceptance_rate,
    alpha_star,
    estimate,
    evaluate,
    output_law,
    output_law_with_bound,
)


def t(values):
    return torch.tensor(values, dtype=torch.float64)


def test_exact_with_replacement_family_on_2000_random_cases():
    """specinfer, ers and deterministic: law == target to 1e-12 (V 2..64, k 1..11, alpha 0.05..5).

    Also: acceptance never above alpha* for the i.i.d. methods, and ers never below specinfer.
    """
    for target, draft, k in random_cases(seed=3, count=2000):
        bound = alpha_star(target, draft, k)
        spec = evaluate("specinfer", target, draft, k)
        ers = evaluate("ers", target, draft, k)
        det = evaluate("deterministic", target, draft, k)
        for result in (spec, ers, det):
            assert torch.allclose(result.law, target, rtol=0, atol=1e-12)
            assert result.err == 0
        assert spec.acceptance <= bound + 1e-12
        assert ers.acceptance <= bound + 1e-12
        assert ers.acceptance >= spec.acceptance - 1e-12


def test_sequoia_exact_by_full_recursion_on_small_cases():
    """Sequoia (without replacement) law == target to 1e-12 by the exact history recursion."""
    for target, draft, k in random_cases(seed=4, count=300, vocab_range=(2, 7), k_range=(1, 4)):
        law = output_law("sequoia", target, draft, k, max_histories=10**6)
        assert torch.allclose(law, target, rtol=0, atol=1e-12)


def test_sequoia_sampled_histories_give_target_on_2000_random_cases():
    """Sequoia on the full grid (V 2..64, k 1..11): every sampled rejection history's law is exactly p
    (residual_i = accepted_i + P(reject_i) residual_{i+1} along any path), so ``estimate`` must return
    the target to 1e-12 whatever histories it samples; this exercises the without-replacement steps."""
    generator = torch.Generator().manual_seed(0)
    for target, draft, k in random_cases(seed=8, count=2000):
        result = estimate("sequoia", target, draft, k, paths=4, generator=generator)
        assert torch.allclose(result.law, target, rtol=0, atol=1e-12)
        assert 0 <= result.acceptance <= 1 + 1e-12


def test_sequoia_pruned_recursion_is_certified():
    """With pruning, law <= target and the missing mass equals the reported bound err."""
    for target, draft, k in random_cases(seed=5, count=100, vocab_range=(16, 64), k_range=(3, 11)):
        law, err = output_law_with_bound("sequoia", target, draft, k, eps=1e-4, max_histories=200)
        assert (law <= target + 1e-12).all()
        assert abs(float((target - law).sum()) - err) < 1e-9


@pytest.mark.parametrize(
    "target,draft",
    [
        ([0.5, 0.5, 0.0], [0.0, 0.0, 1.0]),  # disjoint supports
        ([0.2, 0.3, 0.5], [0.0, 0.5, 0.5]),  # q zero where p is positive
        ([0.2, 0.3, 0.5], [0.2, 0.3, 0.5]),  # p = q
        ([0.0, 1.0, 0.0], [0.3, 0.3, 0.4]),  # one-hot p
        ([0.3, 0.3, 0.4], [1.0, 0.0, 0.0]),  # one-hot q
        ([1 - 2e-300, 1e-300, 1e-300], [1e-300, 1 - 2e-300, 1e-300]),  # tiny probabilities
        ([1 - 1e-15, 1e-15], [1e-15, 1 - 1e-15]),
    ],
)
@pytest.mark.parametrize("k", [1, 2, 5])
def test_exact_methods_on_edge_cases(target, draft, k):
    target, draft = t(target), t(draft)
    for method in ("specinfer", "ers", "sequoia", "optimal", "deterministic"):
        law = output_law(method, target, draft, k)
        assert torch.allclose(law, target, rtol=0, atol=1e-12), method
        assert 0 <= acceptance_rate(method, target, draft, k) <= 1 + 1e-12


def test_p_equals_q_accepts_always():
    target = t([0.1, 0.2, 0.7])
    for method in ("specinfer", "ers", "sequoia", "resispec"):
        assert acceptance_rate(method, target, target, 2) == pytest.approx(1.0, abs=1e-12)


def brute_force_alpha_star(target, draft, k):
    vocab = target.numel()
    best = 1.0
    for size in range(vocab + 1):
        for subset in itertools.combinations(range(vocab), size):
            idx = list(subset)
            best = min(best, float(target[idx].sum() + 1 - draft[idx].sum() ** k))
    return best


def test_alpha_star_equals_brute_force_minimum():
    for target, draft, k in random_cases(seed=6, count=150, vocab_range=(2, 10), k_range=(1, 6)):
        assert alpha_star(target, draft, k) == pytest.approx(
            brute_force_alpha_star(target, draft, k), abs=1e-12
        )


def test_resispec_reproduces_the_spec_test_vector():
    """Spec section 5: p = (.4, .3, .3), q = (.6, .3, .1), k = 1 emits (.4, .48, .12)."""
    law = output_law("resispec", t([0.4, 0.3, 0.3]), t([0.6, 0.3, 0.1]), 1)
    assert torch.allclose(law, t([0.4, 0.48, 0.12]), atol=1e-12)


def test_resispec_laws_are_distributions_and_mostly_inexact():
    """Every variant's law sums to 1 (the recursion is complete); on random pairs it differs from p."""
    inexact = 0
    cases = list(random_cases(seed=7, count=40, vocab_range=(3, 6), k_range=(1, 3)))
    for target, draft, k in cases:
        for budget, order in itertools.product(
            ("local", "global"), ("decreasing_q", "increasing_q", "index")
        ):
            law = output_law("resispec", target, draft, k, budget=budget, order=order)
            assert float(law.sum()) == pytest.approx(1.0, abs=1e-12)
            assert (law >= 0).all()
        inexact += float((law - target).abs().sum()) > 1e-6
    assert inexact > len(cases) // 2


def test_replacement_combinations():
    target, draft = t([0.5, 0.3, 0.2]), t([0.2, 0.3, 0.5])
    same = evaluate("sequoia", target, draft, 2, replacement=True)
    assert same.acceptance == evaluate("specinfer", target, draft, 2).acceptance
    same = evaluate("specinfer", target, draft, 2, replacement=False)
    assert same.acceptance == evaluate("sequoia", target, draft, 2).acceptance
    for method in ("ers", "resispec"):
        with pytest.raises(ValueError, match=f"{method}.*replacement=False"):
            output_law(method, target, draft, 2, replacement=False)
    with pytest.raises(ValueError, match="greedy.*replacement=True"):
        output_law("greedy", target, draft, 2, replacement=True)


def test_greedy_and_deterministic_laws():
    target, draft = t([0.1, 0.6, 0.3]), t([0.5, 0.1, 0.4])
    assert torch.equal(output_law("greedy", target, draft, 2), t([0.0, 1.0, 0.0]))
    assert acceptance_rate("greedy", target, draft, 2) == 0.0  # argmax p = 1 is not in top-2 of q
    assert acceptance_rate("greedy", target, draft, 3) == 1.0
    assert acceptance_rate("deterministic", target, draft, 2) == pytest.approx(0.1 + 0.3)


@pytest.mark.parametrize(
    "target,draft,k,message",
    [
        ([0.5, 0.43], [0.5, 0.5], 1, r"target_probs is not normalised \(sum=0.93\)"),
        ([0.5, 0.5], [1.2, -0.2], 1, "draft_probs has negative entries"),
        ([0.5, float("nan")], [0.5, 0.5], 1, "target_probs contains NaN"),
        ([0.5, 0.5], [0.2, 0.3, 0.5], 1, "shapes differ"),
        ([0.5, 0.5], [0.5, 0.5], 0, "num_candidates must be >= 1"),
        ([0.5, 0.5], [0.5, 0.5], 1.5, "num_candidates must be an int"),
    ],
)
@pytest.mark.parametrize("method", ["specinfer", "optimal"])
def test_bad_inputs_raise_naming_the_problem(target, draft, k, message, method):
    for fn in (output_law, acceptance_rate):
        with pytest.raises(ValueError, match=message):
            fn(method, t(target), t(draft), k)
    with pytest.raises(ValueError, match=message):
        alpha_star(t(target), t(draft), k)


def test_unknown_method_and_options_raise():
    target = t([0.5, 0.5])
    with pytest.raises(ValueError, match="unknown verification method 'nope'"):
        output_law("nope", target, target, 1)
    with pytest.raises(ValueError, match="resispec budget"):
        output_law("resispec", target, target, 1, budget="nope")
    with pytest.raises(ValueError, match="unknown ers options"):
        output_law("ers", target, target, 1, bogus=1)
    with pytest.raises(ValueError, match="must be 1-D"):
        output_law("ers", target.reshape(1, 2), target.reshape(1, 2), 1)
    assert set(METHODS) == {"specinfer", "sequoia", "ers", "resispec", "optimal", "greedy", "deterministic"}


def test_exact_output_law_refuses_when_recursion_must_prune():
    rng = np.random.default_rng(0)
    target = torch.from_numpy(rng.dirichlet(np.ones(40)))
    draft = torch.from_numpy(rng.dirichlet(np.ones(40)))
    with pytest.raises(ValueError, match="output_law_with_bound"):
        output_law("sequoia", target, draft, 6, max_histories=50)
