"""A method of one's own decodes through ``generate``: the example plugin (examples/my_verifiers.py),
first_candidate, verifies only each node's first candidate, and its first emitted token follows the
target's next-token law (chi-square, fixed seeds)."""

from pathlib import Path

import pytest
import torch
from scipy.stats import chisquare

from resispec.decoding.engine import generate
from resispec.workflow.plugins import forget_plugin, load_plugin

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "my_verifiers.py"
PROMPT = torch.tensor([1, 5, 3, 7])
DRAWS = 400  # first tokens; the tiny target's law over 12 tokens, cells of expected count < 5 pooled
ALPHA = 1e-3


@pytest.fixture(scope="module")
def plugin():
    (name,) = load_plugin(str(EXAMPLE))
    yield name
    forget_plugin(str(EXAMPLE))


def decode(models, name, max_new_tokens, generator, **options):
    """``generate`` with the plugin's method on the d3b3 tree, EOS off."""
    target, draft = models
    return generate(
        target,
        draft,
        PROMPT,
        method=name,
        tree="d3b3",
        max_new_tokens=max_new_tokens,
        generator=generator,
        eos_token_id=[],
        **options,
    )


@pytest.mark.parametrize("verify_mode", ["path", "tree"])
def test_generate_decodes_with_the_plugin(target_model, draft_model, plugin, verify_mode):
    """Every step accepts only first candidates (position 0), and max_new_tokens tokens come out."""
    generator = torch.Generator().manual_seed(0)
    out = decode((target_model, draft_model), plugin, 12, generator, verify_mode=verify_mode)
    assert len(out.tokens) == 12
    accepted = [sum(step.position_accepted[1:]) for step in out.steps]
    assert accepted == [0] * len(out.steps) and sum(s.position_accepted[0] for s in out.steps) > 0


def test_the_plugin_first_token_follows_the_target(target_model, draft_model, plugin):
    """The first token generate emits with first_candidate is distributed as the target's next token."""
    with torch.no_grad():
        law = torch.softmax(target_model(PROMPT[None]).logits[0, -1].double(), -1)
    generator = torch.Generator().manual_seed(1)
    counts = torch.zeros_like(law)
    for _ in range(DRAWS):
        out = decode((target_model, draft_model), plugin, 1, generator)
        counts[int(out.tokens[0])] += 1
    expected = law * DRAWS
    big = expected >= 5
    observed = torch.cat([counts[big], counts[~big].sum()[None]])
    wanted = torch.cat([expected[big], expected[~big].sum()[None]])
    keep = wanted > 0
    assert chisquare(observed[keep].numpy(), wanted[keep].numpy()).pvalue > ALPHA
