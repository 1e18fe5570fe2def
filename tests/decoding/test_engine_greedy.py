"""Greedy equivalence with model.generate, EOS / max-length stopping, records and the public API."""

import functools

import pytest
import torch
from tiny_models import tiny_llama

from resispec.decoding import trees
from resispec.decoding.drafters import ModelDrafter
from resispec.decoding.engine import generate

PROMPT = torch.tensor([1, 5, 3, 7])


def _reference(model, n, eos=None):
    out = model.generate(PROMPT[None], max_new_tokens=n, do_sample=False, eos_token_id=eos, pad_token_id=0)
    return out[0, len(PROMPT) :]


@pytest.mark.parametrize("tree", ["chain3", "d4b2", "d3b3", trees.from_paths([[0], [1], [0, 0], [1, 0]])])
@pytest.mark.parametrize("same_draft", [False, True])
def test_temperature_zero_equals_hf_greedy(target_model, draft_model, tree, same_draft):
    draft = target_model if same_draft else draft_model
    ref = _reference(target_model, 24)
    out = generate(target_model, draft, PROMPT, tree=tree, temperature=0, max_new_tokens=24, eos_token_id=[])
    assert torch.equal(out.tokens, ref)
    assert sum(out.accepted_lengths) == 24
    if same_draft:  # a perfect draft commits a whole path plus the bonus token every step
        assert out.accepted_lengths[0] == trees.parse(tree).depth


@pytest.mark.parametrize("verify_mode", ["path", "tree"])
@pytest.mark.parametrize("method", ["specinfer", "optimal"])
def test_root_only_tree_decodes_autoregressively(target_model, draft_model, method, verify_mode):
    """`auto` picks the root-only tree when no speculation pays (tests/decoding/test_pair_profile.py):
    `generate` takes it, and each step commits the target's own token."""
    root_only = trees.Tree(parents=(-1,), name="auto")
    decode = functools.partial(
        generate,
        target_model,
        draft_model,
        PROMPT,
        method=method,
        tree=root_only,
        max_new_tokens=6,
        eos_token_id=[],
    )
    out = decode(temperature=0, verify_mode=verify_mode)
    assert torch.equal(out.tokens, _reference(target_model, 6)) and out.accepted_lengths == [1] * 6
    sampled = decode(temperature=1.0, generator=torch.Generator().manual_seed(0))
    assert sampled.accepted_lengths == [1] * 6


@pytest.mark.parametrize("max_new", [1, 2, 5, 9])
def test_max_new_tokens_is_exact(target_model, max_new):
    generator = torch.Generator().manual_seed(0)
    out = generate(
        target_model,
        target_model,
        PROMPT,
        method="specinfer",
        tree="d4b2",
        temperature=1.0,
        max_new_tokens=max_new,
        generator=generator,
        eos_token_id=[],
    )
    assert len(out.tokens) == max_new == sum(out.accepted_lengths)


def test_eos_stops_like_hf(target_model):
    ref = _reference(target_model, 24)
    eos = int(ref[6])
    stop = ref.tolist().index(eos)
    out = generate(
        target_model, target_model, PROMPT, tree="d4b2", temperature=0, max_new_tokens=24, eos_token_id=eos
    )
    assert out.tokens.tolist() == ref[: stop + 1].tolist() == _reference(target_model, 24, eos=eos).tolist()


def test_eos_from_generation_config_when_sampling():
    model = tiny_llama(0, eos=3)
    generator = torch.Generator().manual_seed(5)
    for _ in range(10):
        out = generate(
            model, model, PROMPT, method="sequoia", tree="d3b2", max_new_tokens=40, generator=generator
        )
        tokens = out.tokens.tolist()
        assert 3 not in tokens[:-1]
        assert tokens[-1] == 3 or len(tokens) == 40


def test_records_are_consistent(target_model, draft_model):
    generator = torch.Generator().manual_seed(1)
    out = generate(
        target_model,
        draft_model,
        PROMPT,
        method="ers",
        tree="d4b2",
        temperature=1.0,
        max_new_tokens=30,
        generator=generator,
        eos_token_id=[],
        audit_top=4,
    )
    record = out.to_record(method="ers", tree="d4b2")
    assert sum(record["accepted_lengths"]) == len(record["new_tokens"]) == 30
    assert all(a <= t for a, t in zip(record["position_accepted"], record["position_tried"], strict=True))
    assert record["depth_tried"][0] == len(out.steps)  # every step verifies the first drafted level
    drafted = [s.accepted_length - 1 for s in out.steps[:-1]]  # last step may be truncated
    assert sum(sum(s.depth_accepted) for s in out.steps[:-1]) == sum(drafted)
    entry = out.steps[0].audit[0]
    assert entry["node"] == 0 and len(entry["candidates"]) == 2
    assert sum(entry["target"]) + entry["target_rest"] == pytest.approx(1.0, abs=1e-5)
    assert sum(entry["draft"]) + entry["draft_rest"] == pytest.approx(1.0, abs=1e-5)
    assert all(t >= 0 for t in (record["time_draft_s"], record["time_target_s"], record["time_verify_s"]))


@torch.no_grad()
def test_model_drafter_node_probs_equal_per_path_probs(draft_model):
    tree = trees.complete(3, 2)
    drafter = ModelDrafter(draft_model)
    drafter.update(PROMPT, ())
    generator = torch.Generator().manual_seed(2)
    draft = drafter.propose(PROMPT, tree, draws="with_replacement", temperature=0.7, generator=generator)
    for node in range(1 + len(tree.levels()[1])):  # root and level 1: the drafted (forwarded) nodes
        ids = torch.cat([PROMPT, draft.tokens[tree.path_to(node)[1:]]])
        reference = torch.softmax(draft_model(input_ids=ids[None]).logits[0, -1] / 0.7, dim=-1)
        torch.testing.assert_close(draft.draft_probs[node], reference, atol=1e-5, rtol=0)


def test_bad_arguments(target_model, draft_model):
    with pytest.raises(ValueError, match="draft"):
        generate(target_model, "nope", PROMPT)
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate(target_model, draft_model, PROMPT, max_new_tokens=-1)
    with pytest.raises(ValueError, match="tree spec"):
        generate(target_model, draft_model, PROMPT, tree="big")


def test_lazy_projection_is_used_only_when_it_reproduces_the_logits(target_model, monkeypatch):
    from resispec.decoding import target as target_module

    heads = []
    original = target_module.TargetModel.prefill

    def spy(self, prompt):
        out = original(self, prompt)
        heads.append(self.head)
        return out

    monkeypatch.setattr(target_module.TargetModel, "prefill", spy)
    ref = _reference(target_model, 10)
    out = generate(target_model, target_model, PROMPT, tree="d3b2", temperature=0, max_new_tokens=10)
    assert heads[-1] is target_model.get_output_embeddings() and torch.equal(out.tokens, ref)
    wrong = torch.nn.Linear(32, 12, bias=False)
    monkeypatch.setattr(target_model, "get_output_embeddings", lambda: wrong)
    out = generate(target_model, target_model, PROMPT, tree="d3b2", temperature=0, max_new_tokens=10)
    assert heads[-1] is None and torch.equal(out.tokens, ref)


def test_single_token_prompt(target_model, draft_model):
    prompt = PROMPT[:1]
    ref = target_model.generate(prompt[None], max_new_tokens=12, do_sample=False, eos_token_id=None)[0, 1:]
    out = generate(
        target_model, draft_model, prompt, tree="d4b2", temperature=0, max_new_tokens=12, eos_token_id=[]
    )
    assert torch.equal(out.tokens, ref)


@pytest.mark.parametrize(
    "tree", ["d4b2", trees.from_paths([[0], [1], [2], [0, 0], [0, 1], [1, 0], [0, 0, 0]])]
)
def test_whole_tree_walk_greedy_equals_hf_greedy(target_model, draft_model, tree):
    """verify_mode="tree" (all nodes verified at once, the CUDA default) gives the same greedy tokens."""
    ref = _reference(target_model, 24)
    out = generate(
        target_model,
        draft_model,
        PROMPT,
        tree=tree,
        temperature=0,
        max_new_tokens=24,
        eos_token_id=[],
        verify_mode="tree",
    )
    assert torch.equal(out.tokens, ref)
