"""Reduced-vocabulary drafts: q = 0 outside the vocabulary, loading, compute, and exact decoding with them.

Statistical test: Pearson chi-square of 2-token continuations decoded with the engine against the
target's exact law, significance ALPHA = 0.001 (fixed seeds; cells with expected count < 5 pooled).
Power (simulated): with 500 samples, a law 10% of the way towards the draft's (TV 0.08 from the
target's) is rejected with probability 0.98; the draft's own law (TV 0.81) always.
"""

import pytest
import torch
from scipy.stats import chisquare
from tiny_models import tiny_llama

from resispec.decoding.engine import generate
from resispec.decoding.profile import position_acceptance
from resispec.models import acceptance, compute, reduced_vocab
from resispec.models.loading import load_model
from resispec.verify import output_law

ALPHA = 0.001
VOCAB = 8
KEPT = torch.tensor([0, 2, 3, 5, 6])  # the draft's vocabulary: q = 0 on tokens 1, 4, 7
PROMPT = torch.tensor([1, 4, 2])
SAMPLES = 500
EXACT_TOL = 1e-12  # float64 laws


@pytest.fixture(scope="module")
def pair():
    draft = tiny_llama(21, VOCAB, init=0.6)
    reduced_vocab.attach(draft, KEPT, draft.lm_head.weight.detach()[KEPT])
    return tiny_llama(20, VOCAB, init=0.6), draft.eval()


def test_head_gives_minus_infinity_outside_its_vocabulary(pair):
    _, draft = pair
    with torch.no_grad():
        logits = draft(input_ids=PROMPT[None]).logits[0]  # [S, V]
        hidden = draft.model(input_ids=PROMPT[None]).last_hidden_state[0]
    outside = torch.ones(VOCAB, dtype=torch.bool)
    outside[KEPT] = False
    assert torch.isneginf(logits[:, outside]).all() and torch.isfinite(logits[:, KEPT]).all()
    torch.testing.assert_close(logits[:, KEPT], draft.lm_head.reduced(hidden), rtol=0, atol=0)
    q = torch.softmax(logits, dim=-1)
    assert (q[:, outside] == 0).all() and torch.allclose(q.sum(-1), torch.ones(len(PROMPT)))
    assert draft.lm_head.positions().tolist() == [0, -1, 1, 2, -1, 3, 4, -1]


def test_compute_counts_the_reduced_rows_only(pair):
    target, draft = pair
    full = compute.per_token_macs(target.config)
    assert compute.per_token_macs(draft.config) == full - 32 * (VOCAB - len(KEPT))


def test_saved_draft_loads_with_the_same_logits(pair, tmp_path):
    _, draft = pair
    draft.save_pretrained(tmp_path)
    loaded = load_model(tmp_path)
    assert isinstance(loaded.lm_head, reduced_vocab.ReducedVocabHead)
    assert loaded.config.draft_vocab_size == len(KEPT) and loaded.config.vocab_size == VOCAB
    with torch.no_grad():
        expected, got = draft(input_ids=PROMPT[None]).logits, loaded(input_ids=PROMPT[None]).logits
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(ValueError, match="missing model.safetensors"):
        load_model(tmp_path)


def test_frequent_tokens_and_bad_sizes():
    chunks = torch.tensor([[3, 3, 3, 1, 1, 2], [3, 1, 0, 5, 5, 5]])
    assert reduced_vocab.frequent_tokens(chunks, 2, 6).tolist() == [1, 3]  # 3 x4, 1 x3, 5 x3: tie by id
    assert reduced_vocab.frequent_tokens(chunks, 2, 6, always=[4]).tolist() == [3, 4]
    for size in (0, 7):
        with pytest.raises(ValueError, match=f"draft vocabulary size {size}"):
            reduced_vocab.frequent_tokens(chunks, size, 6)
    with pytest.raises(ValueError, match="token_ids"):
        reduced_vocab.ReducedVocabHead(torch.zeros(2, 4), torch.tensor([0, 9]), 6)


@pytest.mark.parametrize("method", ["specinfer", "sequoia", "ers"])
def test_output_law_with_zero_draft_mass_is_the_target(pair, method):
    """Every exact verifier's output law equals p when q vanishes off the draft vocabulary."""
    target, draft = pair
    with torch.no_grad():
        p = torch.softmax(target(input_ids=PROMPT[None]).logits[0, -1].double(), -1)  # [V]
        q = torch.softmax(draft(input_ids=PROMPT[None]).logits[0, -1].double(), -1)
    assert (q[[1, 4, 7]] == 0).all()
    for k in (1, 2, 3):
        law = output_law(method, p, q, k)
        assert torch.allclose(torch.as_tensor(law, dtype=torch.float64), p, atol=EXACT_TOL, rtol=0)


@torch.no_grad()
def _two_token_law(model) -> torch.Tensor:
    """P(x1, x2 | prompt) [V, V] by enumeration (float64)."""
    ids = torch.cat([PROMPT.expand(VOCAB, -1), torch.arange(VOCAB)[:, None]], dim=1)  # [V, P + 1]
    probs = torch.softmax(model(input_ids=ids).logits.double()[:, -2:], dim=-1)  # [V, 2, V]
    return probs[0, 0][:, None] * probs[:, 1]


@pytest.mark.parametrize("method", ["specinfer", "sequoia"])
def test_engine_with_a_reduced_draft_keeps_the_target_law(pair, method):
    target, draft = pair
    law = _two_token_law(target)
    generator, counts = torch.Generator().manual_seed(5), torch.zeros(VOCAB, VOCAB)
    for _ in range(SAMPLES):
        out = generate(
            target,
            draft,
            PROMPT,
            method=method,
            tree="d2b3",
            temperature=1.0,
            max_new_tokens=2,
            generator=generator,
            eos_token_id=[],
        )
        counts[tuple(out.tokens.tolist())] += 1
    expected, observed = (law * SAMPLES).flatten(), counts.flatten().double()
    small = expected < 5
    pvalue = chisquare(
        torch.cat([observed[~small], observed[small].sum()[None]]).numpy(),
        torch.cat([expected[~small], expected[small].sum()[None]]).numpy(),
    ).pvalue
    assert pvalue > ALPHA, f"{method} with a reduced draft rejected (p = {pvalue:.3g})"


def test_hf_assisted_generation_and_profile_accept_a_reduced_draft(pair):
    target, draft = pair
    ids = PROMPT[None]
    with torch.no_grad():
        greedy = target.generate(ids, max_new_tokens=6, do_sample=False)
        assisted = target.generate(ids, max_new_tokens=6, do_sample=False, assistant_model=draft)
    assert torch.equal(assisted, greedy)  # HF's assisted greedy decoding is exact
    torch.manual_seed(0)  # HF sampling draws from the global generator (tests only)
    with torch.no_grad():
        sampled = target.generate(ids, max_new_tokens=6, do_sample=True, assistant_model=draft)
    assert sampled.shape == (1, len(PROMPT) + 6) and torch.equal(sampled[0, : len(PROMPT)], PROMPT)
    contexts = [torch.randint(0, VOCAB, (40,), generator=torch.Generator().manual_seed(s)) for s in range(8)]
    first = position_acceptance(target, draft, contexts, k=3)[0]
    expected = acceptance.measure_acceptance(target, draft, contexts, 1.0)
    # first-candidate acceptance is a mean of 320 Bernoulli(sum min(p, q)) draws: within 4 sigma (< 0.12)
    assert first == pytest.approx(expected, abs=0.12)
    assert expected < acceptance.measure_acceptance(target, target, contexts, 1.0)


def test_verifier_draws_never_propose_outside_the_vocabulary(pair):
    _, draft = pair
    with torch.no_grad():
        q = torch.softmax(draft(input_ids=PROMPT[None]).logits[0], -1)  # [S, V]
    from resispec.decoding.drafters.base import draw_children

    for draws in ("with_replacement", "without_replacement", "deterministic"):
        tokens, valid = draw_children(q, len(KEPT), draws, torch.Generator().manual_seed(0))
        assert torch.isin(tokens[valid], KEPT).all(), draws
