"""``certify``: every built-in, the example plugin and three deliberately broken verifiers.

Power: the tests run ``CASES`` (one case per shape, vocabularies 4 to 32) with ``SAMPLES`` rows each;
on a case the chi-square's noncentrality against a sampler at total variation d from its law is at
least 4 * SAMPLES * d^2 = 200 at d = 0.1, against a critical value of at most 80 (V <= 32, level 1e-4 / 5):
power > 0.999. The broken samplers below are at d >= 0.2. A correct sampler fails with probability
<= 1e-4 (fixed seeds: the outcome is fixed too).
"""

from pathlib import Path

import pytest
import torch

from resispec.verify import NO_CANDIDATE, Method, certify, names
from resispec.verify.certify import EXACT, INEXACT_LAW, SAMPLER_DISAGREES, default_cases
from resispec.workflow.plugins import forget_plugin, load_plugin

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "my_verifiers.py"

SAMPLES = 5000
CASES = [case for i, case in enumerate(default_cases(seed=3)) if i % 3 == 0]  # 5 cases: every shape


def _first_or_residual(target_rows, candidates, token):
    """(accepted, token): index 0 when the token is the first candidate, else NO_CANDIDATE."""
    first = candidates[:, 0] if candidates.shape[1] else torch.full_like(token, -1)
    return torch.where(token == first, 0, NO_CANDIDATE), token


class AlwaysFirst(Method):
    """Broken: emits its first candidate, and says so: its law is q (not p)."""

    name, exact, draws = "always_first", True, "with_replacement"

    def law(self, target_probs, draft_probs, k, **options):
        return draft_probs.clone(), 1.0

    def verify(self, target_rows, draft_rows, candidates, valid, generator, **options):
        return torch.zeros(len(candidates), dtype=torch.long), candidates[:, 0]


class ClaimsTarget(AlwaysFirst):
    """Broken: its law claims p, its sampler emits the first candidate (q)."""

    name = "claims_target"

    def law(self, target_probs, draft_probs, k, **options):
        return target_probs.clone(), float(torch.minimum(target_probs, draft_probs).sum())


class OverClaims(Method):
    """Broken: samples p exactly (its law), but claims that a candidate is always accepted."""

    name, exact, draws = "over_claims", True, "with_replacement"

    def law(self, target_probs, draft_probs, k, **options):
        return target_probs.clone(), 1.0

    def verify(self, target_rows, draft_rows, candidates, valid, generator, **options):
        token = torch.multinomial(target_rows, 1, generator=generator)[:, 0]
        return _first_or_residual(target_rows, candidates, token)


@pytest.mark.parametrize(
    "method", sorted(set(names()) & {"specinfer", "ers", "optimal", "sequoia", "deterministic"})
)
def test_exact_built_ins_are_certified_exact(method):
    """Each exact built-in: law p on every case, sampler matching its law, never above the bound."""
    result = certify(method, cases=CASES, seed=1, samples=SAMPLES)
    assert result.exact and result.sampler_matches_law and result.above_alpha_star == [], str(result)
    assert result.verdict == EXACT and result.claimed_exact


def test_resispec_is_reported_inexact():
    """The printed ResiSpec: its sampler matches its law, the law is not p (and it claims no exactness)."""
    result = certify("resispec", cases=CASES, seed=1, samples=SAMPLES)
    assert not result.exact and result.sampler_matches_law and not result.claimed_exact
    assert result.verdict.startswith(INEXACT_LAW) and "case '" in result.verdict


def test_greedy_has_a_point_mass_law():
    """greedy (temperature 0) emits argmax p: an inexact law that its sampler follows."""
    result = certify("greedy", cases=CASES, seed=1, samples=SAMPLES)
    assert not result.exact and result.sampler_matches_law


def test_the_example_plugin_is_certified_exact():
    """examples/my_verifiers.py: exact, its sampler matches, its acceptance never above alpha*."""
    entry = str(EXAMPLE)
    (name,) = load_plugin(entry)
    try:
        result = certify(name, cases=CASES, seed=1, samples=SAMPLES)
    finally:
        forget_plugin(entry)
    assert result.verdict == EXACT and result.above_alpha_star == [], str(result)


def test_an_inexact_law_is_named_with_its_case():
    """A law that is not p: "inexact law", the first failing case named."""
    result = certify(AlwaysFirst(), cases=CASES, seed=1, samples=SAMPLES)
    assert not result.exact and result.sampler_matches_law
    assert result.verdict == f"{INEXACT_LAW} (case {CASES[0].name!r})", str(result)


def test_a_sampler_that_disagrees_with_its_law_is_caught():
    """A law claiming p while the sampler emits q: "sampler disagrees with its law" on every case with
    p != q, though the law alone looks exact."""
    result = certify(ClaimsTarget(), cases=CASES, seed=1, samples=SAMPLES)
    assert result.exact and not result.sampler_matches_law
    assert all(c.verdict == SAMPLER_DISAGREES for c in result.cases), str(result)
    assert result.verdict.startswith(SAMPLER_DISAGREES)


def test_a_claimed_acceptance_above_alpha_star_is_flagged():
    """A law p with acceptance 1 and a sampler that follows p: exact law, but above alpha* (and above
    the bound on every case, as p != q there)."""
    result = certify(OverClaims(), cases=CASES, seed=1, samples=SAMPLES)
    assert result.exact and result.sampler_matches_law
    assert result.above_alpha_star == [c.name for c in CASES]
