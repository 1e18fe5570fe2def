"""Law of 3-token continuations under tree decoding vs the target's exact autoregressive law.

Significance level ALPHA = 0.001 (Pearson chi-square, cells with expected count < 5 pooled, fixed seeds).
The exact verifiers (specinfer, sequoia, ers) must not be rejected; the printed ``resispec`` algorithm
is inexact (docs/verifiers.md section 5) and the same test reports it as rejected.
"""

import itertools

import pytest
import torch
from engine_helpers import tiny_llama
from scipy.stats import chisquare

from resispec.decoding.engine import generate
from resispec.decoding.tree_search import sequoia

ALPHA = 0.001
VOCAB = 6
SAMPLES = 1000
PROMPT = torch.tensor([1, 4, 2])
TEMPERATURE = 1.0


@pytest.fixture(scope="module")
def pair():
    return tiny_llama(10, vocab=VOCAB, init=0.6), tiny_llama(11, vocab=VOCAB, init=0.6)


@torch.no_grad()
def exact_law(model) -> torch.Tensor:
    """P(x1, x2, x3 | prompt) [V, V, V] by enumerating every continuation (float64)."""
    pairs = torch.tensor(list(itertools.product(range(VOCAB), repeat=2)))  # [V^2, 2]
    ids = torch.cat([PROMPT.expand(len(pairs), -1), pairs], dim=1)  # [V^2, P + 2]
    logits = model(input_ids=ids).logits.double() / TEMPERATURE
    probs = torch.softmax(logits[:, len(PROMPT) - 1 :], dim=-1)  # [V^2, 3, V]
    first = probs[0, 0]  # [V]
    second = probs[::VOCAB, 1]  # [V, V]: row x1
    third = probs[:, 2].reshape(VOCAB, VOCAB, VOCAB)  # [x1, x2, x3]
    return first[:, None, None] * second[:, :, None] * third


def chi_square_pvalue(counts: torch.Tensor, law: torch.Tensor) -> float:
    expected = law.flatten() * counts.sum()
    observed = counts.flatten().double()
    small = expected < 5
    obs = torch.cat([observed[~small], observed[small].sum()[None]])
    exp = torch.cat([expected[~small], expected[small].sum()[None]])
    return float(chisquare(obs.numpy(), exp.numpy()).pvalue)


def sample_counts(pair, method, tree, seed) -> torch.Tensor:
    target, draft = pair
    generator = torch.Generator().manual_seed(seed)
    counts = torch.zeros(VOCAB, VOCAB, VOCAB)
    for _ in range(SAMPLES):
        out = generate(
            target, draft, PROMPT, method=method, tree=tree, temperature=TEMPERATURE,
            max_new_tokens=3, generator=generator, eos_token_id=[],
        )  # fmt: skip
        counts[tuple(out.tokens.tolist())] += 1
    return counts


@pytest.mark.parametrize(
    "method, tree, exact",
    [
        ("specinfer", "d3b2", True),
        ("sequoia", "d3b2", True),
        ("ers", "d3b2", True),
        ("resispec", "d3b2", False),
    ],
)
def test_three_token_law(pair, method, tree, exact):
    law = exact_law(pair[0])
    assert float(law.sum()) == pytest.approx(1.0)
    pvalue = chi_square_pvalue(sample_counts(pair, method, tree, seed=123), law)
    print(f"{method} {tree}: chi-square p-value {pvalue:.3g}")
    if exact:
        assert pvalue > ALPHA, f"{method} rejected as inexact (p = {pvalue:.3g} < {ALPHA})"
    else:
        assert pvalue < ALPHA, f"resispec not detected as inexact (p = {pvalue:.3g} >= {ALPHA})"


SEQUOIA_TREE = sequoia([0.55, 0.25, 0.12], budget=10, max_depth=4)  # DP tree: branching 3, 2, 1 by depth


@pytest.mark.parametrize("tree", ["d3b3", SEQUOIA_TREE], ids=["complete_d3b3", "sequoia_dp"])
def test_three_token_law_optimal(pair, tree):
    """``optimal`` continues the subtree of the *selected* candidate position (duplicates allowed): the
    sequence law of 3 tokens matches the target's on a complete tree and on a Sequoia DP tree."""
    assert tree == "d3b3" or len({len(kids) for kids in tree.children if kids}) > 1  # uneven branching
    pvalue = chi_square_pvalue(sample_counts(pair, "optimal", tree, seed=321), exact_law(pair[0]))
    print(f"optimal {tree}: chi-square p-value {pvalue:.3g}")
    assert pvalue > ALPHA, f"optimal rejected as inexact (p = {pvalue:.3g} < {ALPHA})"
