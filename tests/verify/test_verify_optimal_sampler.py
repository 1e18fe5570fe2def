"""The ``optimal`` sampler against its exact laws: chi-square tests (fixed seeds, significance 1e-3) for
the emitted token and for the selected position, acceptance within 4 standard errors of alpha*."""

import numpy as np
import pytest
import torch
from optimal_cases import as_pair, selection_probs, small_cases
from scipy.stats import chisquare

from resispec.bench.pairs import zipf_pair
from resispec.verify import alpha_star, get_verifier
from resispec.verify.optimal.law import build_plan, select_position

ALPHA = 1e-3  # significance of every chi-square test here
DRAWS = 3000  # sampler calls per case (as in test_verify_samplers.py)
STANDARD_ERRORS = 4  # acceptance must lie within this many standard errors of alpha*


def group_case():
    """The first random case whose plan has a segment with >= 3 groups (stick-breaking keys), k = 3."""
    for target, draft, k in small_cases(seed=5, count=200, vocab_range=(5, 6), k_range=(3, 3)):
        plan = build_plan(target, draft, k)
        if any(seg.mass.numel() >= 3 for seg in plan.groups.values()):
            return target, draft, k
    raise AssertionError("no case with a multi-group segment")


def zipf_case():
    target, draft = zipf_pair(200, torch.Generator().manual_seed(1))
    return target, draft, 4


CASES = {
    "group_segment": group_case,
    "duplicates": lambda: (*as_pair([0.1, 0.2, 0.7], [0.6, 0.3, 0.1]), 4),
    "zeros_and_ties": lambda: (*as_pair([0.0, 0.2, 0.2, 0.6, 0.0], [0.1, 0.1, 0.1, 0.3, 0.4]), 3),
    "zipf_200": zipf_case,
}


def pooled_pvalue(observed: np.ndarray, expected: np.ndarray) -> float:
    """Chi-square p-value with cells of expected count < 5 pooled into one cell."""
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    if exp[-1] == 0:
        assert obs[-1] == 0
        obs, exp = obs[:-1], exp[:-1]
    return float(chisquare(obs, exp * obs.sum() / exp.sum()).pvalue) if len(exp) > 1 else 1.0


@pytest.mark.parametrize("name", sorted(CASES))
def test_emitted_token_is_target_and_acceptance_is_alpha_star(name):
    """DRAWS calls with candidates i.i.d. from q: emitted tokens ~ p (chi-square), accepted count within
    4 standard errors of alpha*; an accepted token is the candidate at accepted_index."""
    target, draft, k = CASES[name]()
    verifier, generator = get_verifier("optimal"), torch.Generator().manual_seed(17)
    counts, accepted = np.zeros(target.numel()), 0
    for _ in range(DRAWS):
        candidates = torch.multinomial(draft, k, replacement=True, generator=generator)
        outcome = verifier(target, draft, candidates, generator)
        if outcome.accepted_index is not None:
            assert outcome.token == int(candidates[outcome.accepted_index])
            accepted += 1
        counts[outcome.token] += 1
    assert pooled_pvalue(counts, target.numpy() * DRAWS) > ALPHA
    bound = alpha_star(target, draft, k)
    assert abs(accepted / DRAWS - bound) <= STANDARD_ERRORS * np.sqrt(bound * (1 - bound) / DRAWS) + 1e-12


@pytest.mark.parametrize("name", sorted(CASES))
def test_selected_position_and_token(name):
    """Positions are exchangeable, so P(position i selected, token v) = r(v) / k: chi-square over the
    (position, token) cells of DRAWS selections from i.i.d. candidate tuples."""
    target, draft, k = CASES[name]()
    plan, generator = build_plan(target, draft, k), torch.Generator().manual_seed(23)
    counts = np.zeros((k, target.numel()))
    for _ in range(DRAWS):
        candidates = torch.multinomial(draft, k, replacement=True, generator=generator)
        index = select_position(plan, candidates, draft[candidates] > 0, generator)
        counts[index, int(candidates[index])] += 1
    expected = np.tile(plan.selection.numpy() / k, (k, 1)) * DRAWS
    assert pooled_pvalue(counts.ravel(), expected.ravel()) > ALPHA


def test_selected_position_given_the_tuple():
    """For fixed tuples (rivals in a multi-group segment, duplicates), the selected position follows the
    exact conditional law of the key rule (oracle: piecewise-polynomial integration of the key laws)."""
    target, draft, k = group_case()
    plan, generator = build_plan(target, draft, k), torch.Generator().manual_seed(29)
    segment = max(plan.groups.values(), key=lambda seg: seg.mass.numel())
    members = plan.order[segment.lo : segment.hi][segment.group_of >= 0]  # drafted tokens of the segment
    tuples = [members[[0, 1, 2]], members[[2, 2, 0]], members[[1, -1, -1]]]
    for tup in tuples:
        probs = selection_probs(plan, draft.numpy(), tup.numpy())
        counts = np.zeros(k)
        for _ in range(DRAWS // 2):
            counts[select_position(plan, tup, draft[tup] > 0, generator)] += 1
        assert pooled_pvalue(counts, probs * (DRAWS // 2)) > ALPHA, (tup.tolist(), probs, counts)


def test_accepted_index_is_the_selected_position():
    """With the generator in the same state, the sampler accepts at the position select_position picks."""
    target, draft, k = group_case()
    plan, verifier = build_plan(target, draft, k), get_verifier("optimal")
    generator = torch.Generator().manual_seed(31)
    checked = 0
    for _ in range(300):
        candidates = torch.multinomial(draft, k, replacement=True, generator=generator)
        twin = torch.Generator().set_state(generator.get_state())
        outcome = verifier(target, draft, candidates, generator)
        index = select_position(plan, candidates, draft[candidates] > 0, twin)
        if outcome.accepted_index is not None:
            assert outcome.accepted_index == index
            checked += 1
    assert checked > 100


def test_half_precision_inputs_and_timings():
    """bfloat16 inputs (as from a model) are accepted and planned in float64; timings are recorded."""
    target, draft = zipf_pair(500, torch.Generator().manual_seed(2))
    target, draft = target.to(torch.bfloat16), draft.to(torch.bfloat16)
    verifier, generator = get_verifier("optimal"), torch.Generator().manual_seed(0)
    outcome = verifier(target, draft, torch.multinomial(draft.float(), 3, generator=generator), generator)
    assert 0 <= outcome.token < 500
    assert set(verifier.last_timings) == {"budgeting", "redistribution", "proxy"}
