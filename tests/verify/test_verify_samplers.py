"""The samplers of get_verifier against the exact laws (chi-square) and the engine contract."""

import numpy as np
import pytest
import torch
from scipy.stats import binomtest, chisquare

from resispec.verify import METHODS, evaluate, get_verifier

ALPHA = 1e-3  # significance of every statistical test in this file
DRAWS = 3000  # sampler calls per (method, case)

CASES = [  # (target, draft, k): overlapping, disjoint-ish and the spec's resispec vector
    ([0.4, 0.3, 0.3], [0.6, 0.3, 0.1], 1),
    ([0.05, 0.15, 0.3, 0.2, 0.3], [0.4, 0.3, 0.1, 0.15, 0.05], 3),
    ([0.0, 0.1, 0.6, 0.3, 0.0], [0.5, 0.2, 0.0, 0.1, 0.2], 2),
]


def candidates_for(draws: str, draft: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
    """Candidates as the drafter would produce them for the verifier's ``draws``."""
    if draws == "with_replacement":
        return torch.multinomial(draft, k, replacement=True, generator=generator)
    if draws == "without_replacement":  # Gumbel top-k
        gumbel = -torch.log(-torch.log(torch.rand(draft.shape, generator=generator, dtype=draft.dtype)))
        return torch.topk(torch.log(draft) + gumbel, k).indices
    return torch.topk(draft, k).indices  # deterministic / greedy


def grouped_chisquare(observed: np.ndarray, expected: np.ndarray) -> float:
    """p-value of a chi-square test with cells of expected count < 5 merged into one cell."""
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert obs.sum() == pytest.approx(exp.sum())
    exp = exp * (obs.sum() / exp.sum())  # remove float rounding before scipy's strict sum check
    if len(exp) < 2:
        return 1.0
    return float(chisquare(obs, exp).pvalue)


def run_sampler(verifier, target, draft, k, seed):
    generator = torch.Generator().manual_seed(seed)
    tokens, accepted = np.zeros(target.numel()), 0
    for _ in range(DRAWS):
        cands = candidates_for(verifier.draws, draft, k, generator)
        outcome = verifier(target, draft, cands, generator)
        if outcome.accepted_index is not None:
            assert outcome.token == int(cands[outcome.accepted_index])
            accepted += 1
        tokens[outcome.token] += 1
    return tokens, accepted


@pytest.mark.parametrize("method", ["specinfer", "sequoia", "ers", "resispec", "optimal", "deterministic"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_sampler_law_and_acceptance_match_exact_law(method, case):
    """Token counts over DRAWS seeded calls: chi-square vs output_law; accept count: exact binomial test.

    Both at significance ALPHA = 1e-3 (fixed seeds, so the outcome is deterministic).
    """
    target, draft = (torch.tensor(x, dtype=torch.float64) for x in CASES[case][:2])
    k = CASES[case][2]
    expected = evaluate(method, target, draft, k)
    tokens, accepted = run_sampler(get_verifier(method), target, draft, k, seed=100 + case)
    assert grouped_chisquare(tokens, expected.law.numpy() * DRAWS) > ALPHA
    assert binomtest(accepted, DRAWS, min(max(expected.acceptance, 0.0), 1.0)).pvalue > ALPHA


def test_resispec_sampler_is_inexact_on_the_spec_vector():
    """The test has power: the resispec draws are rejected against p itself (alpha = 1e-3)."""
    target, draft = torch.tensor([0.4, 0.3, 0.3]), torch.tensor([0.6, 0.3, 0.1])
    tokens, _ = run_sampler(get_verifier("resispec"), target, draft, 1, seed=7)
    assert grouped_chisquare(tokens, target.double().numpy() * DRAWS) < ALPHA


def test_greedy_sampler_emits_argmax():
    target, draft = torch.tensor([0.1, 0.6, 0.3]), torch.tensor([0.5, 0.1, 0.4])
    verifier = get_verifier("greedy")
    generator = torch.Generator().manual_seed(0)
    assert verifier(target, draft, torch.tensor([0, 2]), generator) == (None, 1)
    assert verifier(target, draft, torch.tensor([0, 1]), generator) == (1, 1)
    assert verifier(target, draft, torch.tensor([], dtype=torch.long), generator) == (None, 1)


@pytest.mark.parametrize("method", METHODS)
def test_identical_generators_give_identical_draws(method):
    target, draft, k = torch.tensor(CASES[1][0]), torch.tensor(CASES[1][1]), CASES[1][2]
    verifier = get_verifier(method)
    runs = []
    for _ in range(2):
        generator = torch.Generator().manual_seed(42)
        runs.append(
            [
                verifier(target, draft, candidates_for(verifier.draws, draft, k, generator), generator)
                for _ in range(50)
            ]
        )
    assert runs[0] == runs[1]


@pytest.mark.parametrize("method", ["specinfer", "sequoia", "ers", "resispec", "optimal", "deterministic"])
def test_no_candidates_draws_from_target(method):
    """k = 0: the token is drawn from target_probs (chi-square, alpha = 1e-3, 2000 draws)."""
    target, draft = torch.tensor([0.1, 0.6, 0.3]), torch.tensor([0.5, 0.1, 0.4])
    verifier, generator = get_verifier(method), torch.Generator().manual_seed(3)
    counts = np.zeros(3)
    for _ in range(2000):
        outcome = verifier(target, draft, torch.tensor([], dtype=torch.long), generator)
        assert outcome.accepted_index is None
        counts[outcome.token] += 1
    assert grouped_chisquare(counts, target.double().numpy() * 2000) > ALPHA


def test_contract_attributes_timings_and_errors():
    draws = {m: get_verifier(m).draws for m in METHODS}
    assert draws == {
        "specinfer": "with_replacement",
        "sequoia": "without_replacement",
        "ers": "with_replacement",
        "resispec": "with_replacement",
        "optimal": "with_replacement",
        "greedy": "greedy",
        "deterministic": "deterministic",
    }
    assert all(get_verifier(m).method == m for m in METHODS)
    target, draft = torch.tensor([0.4, 0.3, 0.3]), torch.tensor([0.6, 0.3, 0.1])
    generator = torch.Generator().manual_seed(0)
    for method in ("ers", "resispec"):
        verifier = get_verifier(method)
        verifier(target, draft, torch.tensor([0, 0, 0]), generator)
        assert set(verifier.last_timings) == {"budgeting", "redistribution", "proxy"}
        assert all(v >= 0 for v in verifier.last_timings.values())
    with pytest.raises(ValueError, match="unknown verification method"):
        get_verifier("nope")
    with pytest.raises(ValueError, match="unknown resispec options"):
        get_verifier("resispec", bogus=1)
    with pytest.raises(ValueError, match="candidates hold token ids outside"):
        get_verifier("specinfer")(target, draft, torch.tensor([3]), generator)
    with pytest.raises(ValueError, match="target_probs is not normalised"):
        get_verifier("specinfer")(target * 0.9, draft, torch.tensor([0]), generator)


def test_ers_batched_plans_drive_the_sampler_like_its_own_plan():
    """plan_batch rows passed as future_reach give the same draws as the per-call planning pass."""
    rng = np.random.default_rng(5)
    targets = torch.from_numpy(rng.dirichlet(np.full(12, 0.5), size=4))
    drafts = torch.from_numpy(rng.dirichlet(np.full(12, 0.5), size=4))
    verifier = get_verifier("ers")
    futures = verifier.plan_batch(targets, drafts, 3)  # [N, k]
    assert futures.shape == (4, 3)
    for row in range(4):
        runs = []
        for future in (futures[row], None):
            generator = torch.Generator().manual_seed(row)
            runs.append(
                [
                    verifier(
                        targets[row],
                        drafts[row],
                        candidates_for("with_replacement", drafts[row], 3, generator),
                        generator,
                        future_reach=future,
                    )
                    for _ in range(40)
                ]
            )
        assert runs[0] == runs[1]
    with pytest.raises(ValueError, match="future_reach must have shape"):
        verifier(targets[0], drafts[0], torch.tensor([0, 1]), torch.Generator(), future_reach=futures[0])
    with pytest.raises(ValueError, match="only meaningful for ers"):
        get_verifier("specinfer")(
            targets[0], drafts[0], torch.tensor([0]), torch.Generator(), future_reach=futures[0]
        )


def test_resispec_partial_fill_order_equals_the_full_sort():
    """The sampler's top-k prefix of the fill order gives the very residual of the full sort (ties too),
    and falls back to the full sort when the prefix cannot hold the deficit; both paths are exercised."""
    from resispec.verify import resispec as steps

    used = {"prefix": 0, "fallback": 0}
    for seed in range(40):
        generator = torch.Generator().manual_seed(seed)
        draft = torch.softmax(2 * torch.randn(300, generator=generator, dtype=torch.float64), -1)
        draft = (draft * 2000).round() / (draft * 2000).round().sum()  # many exactly tied q values
        target = torch.softmax(2 * torch.randn(300, generator=generator, dtype=torch.float64), -1)
        residual, tokens = target[None], torch.tensor([int(draft.argmax())])
        budget = steps.budget_mass(residual, draft, tokens, "local" if seed % 2 else "global")
        prefix, full = steps.fill_prefix(draft, 16), steps.fill_order(draft, "decreasing_q")
        assert len(prefix) >= 16 and torch.equal(prefix, full[: len(prefix)])
        reference = steps.redistribute(residual, draft, tokens, budget, full)
        partial = steps.redistribute_prefix(residual, draft, tokens, budget, prefix)
        used["fallback" if partial is None else "prefix"] += 1
        assert partial is None or torch.equal(partial, reference)
        assert torch.equal(steps.redistribute_prefix(residual, draft, tokens, budget, full), reference)
    assert used["prefix"] and used["fallback"], used
