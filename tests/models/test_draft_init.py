"""Drafts initialised from the target's own layers: copies, pruning, reduced heads, bad architectures."""

import pytest
import torch

from resispec.models import compute, draft_init, draft_training
from resispec.models.loading import load_model
from resispec.models.reduced_vocab import ReducedVocabHead


@pytest.fixture(scope="module")
def target(tiny_target):
    return load_model(tiny_target)


def _draft(target, arch, tokens=None):
    calibration = torch.randint(0, 256, (4, 32), generator=torch.Generator().manual_seed(0))
    chunks = calibration if tokens is None else tokens
    draft, ratio = draft_training.build_draft(target, arch, chunks, torch.Generator().manual_seed(0), 10.0)
    return draft.eval(), ratio


def test_all_layers_copied_reproduce_the_target(target):
    draft, ratio = _draft(target, draft_init.DraftArch(layers=4))
    ids = torch.randint(0, 256, (2, 20), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(draft(input_ids=ids).logits, target(input_ids=ids).logits, rtol=0, atol=0)
    assert ratio == pytest.approx(1.0)


def test_default_layers_are_the_first_ones_and_the_last():
    assert draft_init.DraftArch(layers=4).chosen_layers(30) == (0, 1, 2, 29)
    assert draft_init.DraftArch(layers=1).chosen_layers(30) == (0,)
    assert draft_init.DraftArch(source_layers=[0, 1, 2, 29]).layers == 4


def test_subset_with_a_reduced_vocabulary_keeps_the_target_logits_on_it(target):
    """All 4 layers with a 40-token head (the 39 tokens of the text and end-of-text, always kept): the
    target's logits on those tokens, -inf elsewhere."""
    tokens = torch.randint(0, 39, (8, 32), generator=torch.Generator().manual_seed(2))
    draft, ratio = _draft(target, draft_init.DraftArch(source_layers=[0, 1, 2, 3], vocab=40), tokens)
    kept = list(range(39)) + [target.config.eos_token_id]
    assert isinstance(draft.lm_head, ReducedVocabHead) and draft.lm_head.token_ids.tolist() == kept
    with torch.no_grad():
        got, expected = draft(input_ids=tokens[:2]).logits, target(input_ids=tokens[:2]).logits
    torch.testing.assert_close(got[..., kept], expected[..., kept], rtol=1e-6, atol=1e-6)
    assert torch.isneginf(got[..., 39:256]).all() and torch.isneginf(got[..., 257:]).all()
    assert ratio == pytest.approx(compute.compute_ratio(draft.config, target.config)) and ratio < 1.0


def test_pruning_keeps_the_most_important_neurons(target):
    """With the down_proj columns of all but 10 neurons scaled by 1e-3, pruning to 10 keeps exactly those."""
    important = torch.arange(0, 256, 25)[:10]
    with torch.no_grad():
        saved = target.model.layers[2].mlp.down_proj.weight.clone()
        scale = torch.full((256,), 1e-3)
        scale[important] = 1.0
        target.model.layers[2].mlp.down_proj.weight.mul_(scale)
        try:
            draft, _ = _draft(target, draft_init.DraftArch(source_layers=[2], intermediate=10))
        finally:
            target.model.layers[2].mlp.down_proj.weight.copy_(saved)
    mlp, source = draft.model.layers[0].mlp, target.model.layers[2].mlp
    torch.testing.assert_close(mlp.gate_proj.weight, source.gate_proj.weight[important])
    torch.testing.assert_close(mlp.down_proj.weight, saved[:, important])
    assert draft.config.intermediate_size == 10


@pytest.mark.parametrize(
    "arch, message",
    [
        ({"init": "copy"}, "init 'copy'"),
        ({"source_layers": [0, 0]}, r"source_layers \[0, 0\]"),
        ({"source_layers": [4]}, r"source_layers \[4\]"),
        ({"intermediate": 5000}, "intermediate 5000"),
        ({"init": "random", "hidden": 512}, "hidden 512"),
        ({"vocab": 0}, "draft vocabulary size 0"),
    ],
)
def test_bad_architectures_are_refused(target, arch, message):
    with pytest.raises(ValueError, match=message):
        _draft(target, draft_init.DraftArch(**arch))
