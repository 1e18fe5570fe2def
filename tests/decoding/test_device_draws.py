"""Drafting draws on the device: ``draw_with_replacement`` has the law of ``torch.multinomial`` (chi-square
against the draft's law, per row) and no ``torch.multinomial`` (whose input checks read the device on the
host, a sync no Python counter sees) runs anywhere in ``generate``'s steps, for every method, both
drafters, chain (``kNdD``), complete, Sequoia and EAGLE trees, counted at the ATen dispatcher."""

from __future__ import annotations

import pytest
import torch
from scipy.stats import chi2, chisquare, ncx2
from torch.utils._python_dispatch import TorchDispatchMode

from resispec.decoding import engine, tree_specs, trees
from resispec.decoding.drafters import EagleDrafter, draw_with_replacement
from resispec.decoding.tree_search import sequoia
from resispec.models.eagle_head import new_eagle_head

ALPHA = 0.001  # chi-square significance per row (fixed seed)
DRAWS = 60_000  # per row
# three draft laws (unnormalised, zero-mass entries included), one per row
LAWS = torch.tensor(
    [
        [0.30, 0.20, 0.0, 0.15, 0.10, 0.10, 0.05, 0.05, 0.03, 0.02],
        [0.01, 0.02, 0.03, 0.04, 0.10, 0.0, 0.0, 0.20, 0.25, 0.35],
        [2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0],
    ],
    dtype=torch.float32,
)
PROMPT = torch.tensor([1, 5, 3, 7])
METHODS = ("specinfer", "sequoia", "resispec", "ers", "deterministic", "optimal")
TREES = {
    "k3d4": lambda: tree_specs.resolve("k3d4"),
    "d3b3": lambda: trees.complete(3, 3),
    "sequoia": lambda: sequoia([0.6, 0.25, 0.1], 12, 4),
    "eagle": lambda: tree_specs.resolve("eagle"),
}


def _power(law: torch.Tensor) -> float:
    """Power of the row's test at ALPHA against moving 0.01 of mass from its largest to its smallest
    positive entry (a 0.01 total-variation error), by the noncentral chi-square approximation."""
    p = law.double() / law.double().sum()
    support = p > 0
    alternative = p.clone()
    alternative[p.argmax()] -= 0.01
    alternative[torch.where(support, p, torch.inf).argmin()] += 0.01
    noncentrality = DRAWS * float((((alternative - p) ** 2)[support] / p[support]).sum())
    df = int(support.sum()) - 1
    return float(ncx2.sf(chi2.isf(ALPHA, df), df, noncentrality))


def test_draws_follow_each_rows_law_and_never_a_zero_mass_token():
    tokens = draw_with_replacement(LAWS, DRAWS, torch.Generator().manual_seed(7))  # [3, DRAWS]
    assert tokens.shape == (3, DRAWS) and tokens.dtype == torch.long
    for row, law in enumerate(LAWS):
        support = law > 0
        counts = torch.bincount(tokens[row], minlength=len(law)).double()
        assert counts[~support].sum() == 0
        expected = (law.double() / law.double().sum())[support] * DRAWS
        assert chisquare(counts[support].numpy(), expected.numpy()).pvalue > ALPHA
        assert _power(law) > 0.99  # the test would see a 0.01 total-variation error


def test_same_generator_state_same_tokens():
    first = draw_with_replacement(LAWS, 50, torch.Generator().manual_seed(3))
    assert torch.equal(first, draw_with_replacement(LAWS, 50, torch.Generator().manual_seed(3)))


class _CountMultinomial(TorchDispatchMode):
    """Counts ATen multinomial calls (``torch.multinomial`` and ``Tensor.multinomial`` alike)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket is torch.ops.aten.multinomial:
            self.calls += 1
        return func(*args, **(kwargs or {}))


@pytest.fixture(scope="module")
def eagle_head(target_model):
    return new_eagle_head(target_model, torch.Generator().manual_seed(3)).eval()


@pytest.mark.parametrize("tree", list(TREES))
@pytest.mark.parametrize("drafter", ["model", "eagle"])
@pytest.mark.parametrize("method", METHODS)
def test_no_multinomial_in_generate(target_model, draft_model, eagle_head, method, drafter, tree):
    draft = draft_model if drafter == "model" else EagleDrafter(eagle_head)
    with _CountMultinomial() as counter:
        out = engine.generate(
            target_model,
            draft,
            PROMPT,
            method=method,
            tree=TREES[tree](),
            max_new_tokens=12,
            eos_token_id=[],
            generator=torch.Generator().manual_seed(0),
        )
    assert len(out.steps) >= 2
    assert counter.calls == 0
