"""Draft distillation: compute budget, acceptance measure, and a tiny training run."""

import json

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from resispec.models import acceptance, compute, draft_init, draft_training
from resispec.models.loading import load_model


def _linear_weights(config) -> int:
    """MACs per token counted independently: every nn.Linear weight of the instantiated model."""
    model = LlamaForCausalLM(config)
    return sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


@pytest.mark.parametrize("kv_heads", [9, 3])
def test_per_token_macs_counts_every_matrix(kv_heads):
    config = LlamaConfig(
        vocab_size=1000,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=2,
        num_attention_heads=9,
        num_key_value_heads=kv_heads,
        head_dim=64,
    )
    assert compute.per_token_macs(config) == _linear_weights(config)
    assert compute.per_token_macs(config, context_len=10) == _linear_weights(config) + 2 * 2 * 10 * 9 * 64


def test_default_draft_fits_the_budget_of_smollm2():
    smollm2 = LlamaConfig(
        vocab_size=49152,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        head_dim=64,
        bos_token_id=1,
        eos_token_id=2,
    )
    draft = draft_init.make_draft_config(smollm2, layers=4, hidden=256)
    small = draft_init.make_draft_config(smollm2, layers=2, hidden=128)
    assert compute.compute_ratio(draft, smollm2) <= 0.15
    assert compute.compute_ratio(small, smollm2) < compute.compute_ratio(draft, smollm2)
    assert draft.vocab_size == smollm2.vocab_size and draft.eos_token_id == 2


def test_acceptance_is_one_minus_total_variation(tiny_target, tiny_tokens):
    target = load_model(tiny_target)
    other = LlamaForCausalLM(draft_init.make_draft_config(target.config, layers=1, hidden=32)).eval()
    contexts = [tiny_tokens[0][:20], tiny_tokens[1][:20], tiny_tokens[2][:9]]
    assert acceptance.measure_acceptance(target, target, contexts, 1.0) == pytest.approx(1.0)
    expected, count = 0.0, 0
    with torch.no_grad():
        for ids in contexts:
            for logits_t, logits_d in zip(
                target(torch.tensor([ids])).logits[0], other(torch.tensor([ids])).logits[0], strict=True
            ):
                target_probs = torch.softmax(logits_t / 0.6, -1).double()
                draft_probs = torch.softmax(logits_d / 0.6, -1).double()
                expected += 1 - 0.5 * float((target_probs - draft_probs).abs().sum())
                count += 1
    assert acceptance.measure_acceptance(target, other, contexts, 0.6) == pytest.approx(
        expected / count, abs=1e-6
    )
    greedy = acceptance.measure_acceptance(target, other, contexts, 0.0)
    assert 0.0 <= greedy <= 1.0 and greedy * count == pytest.approx(round(greedy * count))


def test_too_large_draft_is_refused(tiny_target, tiny_tokens, tmp_path):
    with pytest.raises(ValueError, match="max_compute_ratio"):
        big = {"init": "random", "layers": 4, "hidden": 128}
        draft_training.train_draft(tiny_target, tmp_path / "d", token_ids=tiny_tokens, arch=big, steps=1)
    with pytest.raises(ValueError, match="max_compute_ratio"):  # 3 of the target's 4 layers
        draft_training.train_draft(
            tiny_target, tmp_path / "d", token_ids=tiny_tokens, arch={"layers": 3}, steps=1
        )
    assert not (tmp_path / "d").exists()


def test_tiny_distillation_lowers_loss_and_raises_acceptance(tiny_target, tiny_tokens, tmp_path):
    report = draft_training.train_draft(
        tiny_target,
        tmp_path / "draft",
        token_ids=tiny_tokens[:10],
        heldout=tiny_tokens[10:],
        arch={"init": "random", "layers": 1, "hidden": 32},
        steps=120,
        teacher_tokens=100_000,
        seq_len=32,
        batch_size=8,
        lr=1e-2,
        seed=0,
        amp=False,
    )
    assert report["compute_ratio"] <= 0.15
    assert (
        report["cost"]["teacher_tokens"] == 94 * 32
    )  # the whole corpus: 10 x (300 tokens + EOS), in chunks of 32
    assert report["cost"]["train_tokens"] == 120 * 8 * 32 and report["steps"] == 120
    assert report["loss_last"] < 0.5 * report["loss_first"]
    assert report["acceptance"]["1.0"] > report["acceptance_before"]["1.0"] + 0.2
    draft = load_model(tmp_path / "draft")
    target = load_model(tiny_target)
    assert draft.config.vocab_size == target.config.vocab_size
    assert json.loads((tmp_path / "draft" / "training.json").read_text())["steps"] == report["steps"]
    again = acceptance.measure_acceptance(target, draft, tiny_tokens[10:], 1.0)
    assert again == pytest.approx(report["acceptance"]["1.0"], abs=1e-5)  # the saved draft is the trained one
