"""Bad arguments of `generate` stop at the boundary with a ValueError naming the argument and showing the
bad value; every tree spec a sheet accepts is accepted (or, needing the pair profile, refused saying so);
a tree above the node cap is refused before it is built; a draft of another vocabulary is refused naming
both sizes, and the package's own reduced-vocabulary draft decodes."""

import math

import pytest
import torch
from tiny_models import tiny_llama

from resispec.decoding import tree_specs, trees
from resispec.decoding.arguments import SPEC_FORMS, output_vocab_size, tree_spec
from resispec.decoding.drafters import ModelDrafter
from resispec.decoding.engine import generate
from resispec.decoding.tree_specs import MAX_NODES
from resispec.models import reduced_vocab

VOCAB = 12  # tiny_llama's vocabulary (tests/tiny_models.py)
IDS = torch.tensor([1, 2, 3, 4])

# (keyword arguments of generate, text the message must hold): each row one bad input
BAD_ARGUMENTS = [
    ({"temperature": math.nan}, "temperature must be finite and >= 0 (0 = greedy), got nan"),
    ({"temperature": math.inf}, "temperature must be finite and >= 0 (0 = greedy), got inf"),
    ({"temperature": -0.5}, "temperature must be finite and >= 0 (0 = greedy), got -0.5"),
    ({"temperature": "1.0"}, "temperature must be a real number >= 0, got '1.0'"),
    ({"temperature": None}, "temperature must be a real number >= 0, got None"),
    (
        {"input_ids": torch.tensor([[1, 2, 3], [4, 5, 6]])},
        "exactly one sequence ([L] or [1, L]), got shape (2, 3)",
    ),
    ({"input_ids": torch.tensor([[[1, 2, 3]]])}, "exactly one sequence ([L] or [1, L]), got shape (1, 1, 3)"),
    ({"input_ids": torch.tensor(3)}, "exactly one sequence ([L] or [1, L]), got shape ()"),
    (
        {"input_ids": torch.tensor([1.0, 2.0])},
        "input_ids must hold integer token ids, got dtype torch.float32",
    ),
    (
        {"input_ids": torch.tensor([True, False])},
        "input_ids must hold integer token ids, got dtype torch.bool",
    ),
    (
        {"input_ids": torch.tensor([1, VOCAB])},
        f"token id {VOCAB} is outside the target's vocabulary [0, {VOCAB})",
    ),
    ({"input_ids": torch.tensor([-1, 2])}, f"token id -1 is outside the target's vocabulary [0, {VOCAB})"),
    ({"input_ids": [3, 99]}, f"token id 99 is outside the target's vocabulary [0, {VOCAB})"),
    ({"input_ids": torch.tensor([], dtype=torch.long)}, "input_ids must hold a non-empty sequence"),
    ({"max_new_tokens": -1}, "max_new_tokens must be an integer >= 0, got -1"),
    ({"max_new_tokens": 2.5}, "max_new_tokens must be an integer >= 0, got 2.5"),
    ({"max_new_tokens": "8"}, "max_new_tokens must be an integer >= 0, got '8'"),
]

# (tree spec, text the message must hold): the same specs and messages as the sheets' (test_sheet_errors)
BAD_TREES = [
    ("d3b0", "tree spec 'd3b0': branch must be >= 1, got 0"),
    ("d0b2", "tree spec 'd0b2': depth must be >= 1, got 0"),
    ("d1b4", "tree spec 'd1b4': drafts no token"),
    ("chain0", "tree spec 'chain0': drafts no token"),
    ("k0d3", "tree spec 'k0d3': kNdD needs N >= 1"),
    ("sequoia1x3", "tree spec 'sequoia1x3': sequoiaNxD needs N >= 2 nodes and D >= 2 levels"),
    ("sequoia8x0", "tree spec 'sequoia8x0': sequoiaNxD needs N >= 2 nodes and D >= 2 levels"),
    ("auto-magic", "tree spec 'auto-magic': unknown verifier 'magic' in auto-METHOD"),
    ("blob", f"tree spec 'blob': not understood (expected {SPEC_FORMS})"),
    ("", "tree spec '': expected a Tree or a non-empty string"),
    (7, "tree spec 7: expected a Tree or a non-empty string"),
    ("d40b4", f"tree spec 'd40b4': {(4**40 - 1) // 3:,} nodes, more than the {MAX_NODES} a tree may have"),
    ("d12b6", f"tree spec 'd12b6': 435,356,467 nodes, more than the {MAX_NODES} a tree may have"),
    ("chain1024", f"tree spec 'chain1024': 1,025 nodes, more than the {MAX_NODES} a tree may have"),
    ("k64d18", f"tree spec 'k64d18': 1,089 nodes, more than the {MAX_NODES}"),
    ("sequoia4096x8", f"tree spec 'sequoia4096x8': 4,096 nodes, more than the {MAX_NODES}"),
    ("d9999999999b4", f"tree spec 'd9999999999b4': more than 2^4096 nodes, more than the {MAX_NODES}"),
]
PROFILE_TREES = ["sequoia8x4", "auto", "auto-ers"]  # accepted by sheets; generate needs the pair profile


def _generate(target_model, draft_model, **overrides):
    kwargs = {"input_ids": IDS, "tree": "d2b2", "max_new_tokens": 3, "method": "specinfer", **overrides}
    kwargs["generator"] = torch.Generator().manual_seed(0)
    return generate(target_model, draft_model, **kwargs)


@pytest.mark.parametrize(("overrides", "message"), BAD_ARGUMENTS)
def test_bad_generate_argument_is_named(target_model, draft_model, overrides, message):
    with pytest.raises(ValueError) as error:
        _generate(target_model, draft_model, **overrides)
    assert message in str(error.value)


@pytest.mark.parametrize(("spec", "message"), BAD_TREES)
def test_bad_tree_spec_is_named(target_model, draft_model, spec, message):
    with pytest.raises(ValueError) as error:
        _generate(target_model, draft_model, tree=spec)
    assert message in str(error.value)


@pytest.mark.parametrize("spec", PROFILE_TREES)
def test_profile_trees_are_refused_naming_what_they_need(target_model, draft_model, spec):
    assert tree_spec(spec) is None  # well formed: the sheets accept it
    with pytest.raises(ValueError) as error:
        _generate(target_model, draft_model, tree=spec)
    assert f"tree spec {spec!r}: needs the pair profile" in str(error.value)


@pytest.mark.parametrize("spec", ["k2d3", "K2D3", "eagle", "chain3", " d3b2 "])
def test_generate_takes_every_spec_a_sheet_takes(target_model, draft_model, spec):
    out = _generate(target_model, draft_model, tree=spec)
    assert len(out.tokens) == 3


def test_a_one_row_batch_and_a_list_are_one_prompt(target_model, draft_model):
    expected = _generate(target_model, draft_model).tokens
    assert torch.equal(_generate(target_model, draft_model, input_ids=IDS[None]).tokens, expected)
    assert torch.equal(_generate(target_model, draft_model, input_ids=IDS.tolist()).tokens, expected)
    assert torch.equal(_generate(target_model, draft_model, input_ids=IDS.int()).tokens, expected)


@pytest.mark.parametrize("spec", ["d40b4", "d12b6", "chain5000", "k300d5", "k300c4", "sequoia9999x8"])
def test_an_oversized_tree_is_refused_before_it_is_built(monkeypatch, spec):
    """The node count comes from the spec's numbers: no builder runs for a tree above the cap."""

    def no_build(*args, **kwargs):
        raise AssertionError(f"a builder ran for {spec!r}")

    for module, name in [
        (trees, "complete"),
        (trees, "chain"),
        (tree_specs, "chains"),
        (tree_specs, "sequoia"),
    ]:
        monkeypatch.setattr(module, name, no_build)
    for check in (tree_spec, tree_specs.resolve):
        with pytest.raises(ValueError, match=rf"tree spec {spec!r}: [\d,]+ nodes, more than the {MAX_NODES}"):
            check(spec)


@pytest.mark.parametrize("spec", ["d7b2", "d5b3", "d4b5", "d3b11", "d1b3", "chain6", "k3d4", "k2c3", "eagle"])
def test_node_count_of_a_spec_is_the_built_trees(spec):
    assert tree_specs.spec_nodes(spec) == tree_specs.resolve(spec).num_nodes


def test_the_cap_itself_is_allowed():
    assert tree_spec(f"chain{MAX_NODES - 1}").num_nodes == MAX_NODES


def _counting_forwards(model) -> list:
    calls = []
    model.register_forward_hook(lambda *args: calls.append(1))
    return calls


@pytest.mark.parametrize("draft_vocab", [80, 48])
def test_a_draft_of_another_vocabulary_is_refused_naming_both_sizes(draft_vocab):
    """A plain Hugging Face draft whose vocabulary is not the target's stops before any forward."""
    target, draft = tiny_llama(0, vocab=64), tiny_llama(1, vocab=draft_vocab)
    forwards = _counting_forwards(target) + _counting_forwards(draft)
    for given in (draft, ModelDrafter(draft)):
        with pytest.raises(ValueError) as error:
            _generate(target, given)
        assert f"draft vocabulary: the draft scores {draft_vocab} tokens, the target 64" in str(error.value)
    assert forwards == []


def test_a_reduced_vocabulary_draft_of_this_package_still_decodes():
    """The package's own reduced-vocabulary draft (q = 0 outside 20 of 64 tokens) keeps the full size."""
    target, draft = tiny_llama(0, vocab=64), tiny_llama(1, vocab=64)
    kept = torch.arange(0, 64, 3)[:20]
    reduced_vocab.attach(draft, kept)
    assert output_vocab_size(draft) == 64 and draft.get_output_embeddings().weight.shape[0] == 20
    out = _generate(target, draft, max_new_tokens=6)
    assert len(out.tokens) == 6 and out.tokens.max() < 64
