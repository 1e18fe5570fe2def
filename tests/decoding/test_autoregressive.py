"""The autoregressive baseline (`resispec.decoding.autoregressive`): greedy equals Hugging Face's
greedy decoding, sampling follows the target's exact sequence law, EOS stops it, records fit the raw
format."""

import itertools

import pytest
import torch
from scipy.stats import chisquare
from tiny_models import tiny_llama

from resispec.decoding import compiled
from resispec.decoding.autoregressive import sample
from resispec.decoding.engine import generate

PROMPT = torch.tensor([1, 5, 3, 7])
ALPHA = 0.001  # chi-square significance (fixed seed)
VOCAB, SAMPLES = 5, 1500


def test_greedy_equals_hf(target_model):
    ref = target_model.generate(PROMPT[None], max_new_tokens=12, do_sample=False, eos_token_id=None)[0, 4:]
    out = sample(
        target_model, PROMPT, temperature=0, max_new_tokens=12, generator=torch.Generator(), eos_token_id=[]
    )
    assert torch.equal(out.tokens, ref)


@torch.no_grad()
def test_two_token_law_is_the_targets():
    """At T = 0.7 the law of (x1, x2) matches the exact one: chi-square not rejected at ALPHA."""
    model = tiny_llama(4, vocab=VOCAB, init=0.5)
    prompt = torch.tensor([1, 2])
    ids = torch.cat([prompt.expand(VOCAB, -1), torch.arange(VOCAB)[:, None]], dim=1)  # [V, 3]
    probs = torch.softmax(model(input_ids=ids).logits.double()[:, 1:] / 0.7, dim=-1)  # [V, 2, V]
    law = (probs[0, 0][:, None] * probs[:, 1]).flatten()  # [V * V]: P(x1) P(x2 | x1)
    generator, counts = torch.Generator().manual_seed(11), torch.zeros(VOCAB * VOCAB)
    for _ in range(SAMPLES):
        out = sample(model, prompt, temperature=0.7, max_new_tokens=2, generator=generator, eos_token_id=[])
        counts[out.tokens[0] * VOCAB + out.tokens[1]] += 1
    expected = law * SAMPLES
    keep = expected >= 5
    observed = torch.cat([counts[keep], counts[~keep].sum()[None]]).double()
    expected = torch.cat([expected[keep], expected[~keep].sum()[None]])
    assert chisquare(observed.numpy(), expected.numpy()).pvalue > ALPHA


def test_eos_stops_and_records_have_the_raw_format(target_model):
    def decode(eos_token_id):
        generator = torch.Generator().manual_seed(0)
        return sample(
            target_model,
            PROMPT,
            temperature=1.0,
            max_new_tokens=20,
            generator=generator,
            eos_token_id=eos_token_id,
        )

    out = decode([])
    stop = int(out.tokens[3])
    again = decode(stop)
    assert again.tokens.tolist() == out.tokens[: out.tokens.tolist().index(stop) + 1].tolist()
    record = out.to_record(method="autoregressive")
    assert record["accepted_lengths"] == [1] * 20 and len(record["new_tokens"]) == 20
    assert record["position_tried"] == [] and record["time_draft_s"] == 0.0 and record["time_target_s"] > 0
    with pytest.raises(ValueError, match="max_new_tokens"):
        sample(target_model, PROMPT, max_new_tokens=-1, generator=torch.Generator())


def test_same_seed_same_tokens(target_model):
    runs = [
        sample(
            target_model,
            PROMPT,
            temperature=1.0,
            max_new_tokens=10,
            generator=torch.Generator().manual_seed(5),
            eos_token_id=[],
        ).tokens
        for _ in range(2)
    ]
    assert torch.equal(*runs) and len(set(itertools.chain(runs[0].tolist()))) > 1


def test_the_baseline_runs_the_runs_compile_mode_on_the_static_cache(eager_backend, target_model):
    """The same engine settings as the methods: the static cache of tree decoding and the run's compile
    mode (one graph for the one-token forward, reused by a second prompt of another length), greedy
    tokens still Hugging Face's; records name the modes it ran with."""
    ref = target_model.generate(PROMPT[None], max_new_tokens=10, do_sample=False, eos_token_id=None)[0, 4:]
    kwargs = {"temperature": 0, "max_new_tokens": 10, "eos_token_id": [], "capacity": 40}
    out = sample(target_model, PROMPT, generator=torch.Generator(), compile_mode="default", **kwargs)
    graphs = eager_backend["stats"]["unique_graphs"]
    assert graphs >= 1 and torch.equal(out.tokens, ref)
    cache = compiled.static_cache(target_model, "target", 1)
    assert cache.capacity >= 40 and all(k is not None for k in cache.keys)  # written by the baseline
    sample(target_model, PROMPT[:3], generator=torch.Generator(), compile_mode="default", **kwargs)
    assert eager_backend["stats"]["unique_graphs"] == graphs
    record = out.to_record(method="autoregressive")
    assert (record["compile_mode"], record["verify_mode"]) == ("default", "none")
    eager = sample(target_model, PROMPT, generator=torch.Generator(), **kwargs).to_record()
    assert (eager["compile_mode"], eager["verify_mode"]) == ("none", "none")  # "auto" on a CPU


def test_engine_records_name_the_modes_they_ran_with(target_model, draft_model):
    kwargs = {"tree": "d2b2", "max_new_tokens": 4, "generator": torch.Generator().manual_seed(0)}
    record = generate(target_model, draft_model, PROMPT, **kwargs).to_record()
    assert (record["compile_mode"], record["verify_mode"]) == ("none", "path")  # the CPU's choices
    record = generate(target_model, draft_model, PROMPT, verify_mode="tree", **kwargs).to_record()
    assert record["verify_mode"] == "tree"
