"""EAGLE-1 head: published checkpoint layout, cache and mask semantics, a tiny training run."""

import json

import pytest
import torch

from resispec.models import eagle_head, eagle_training
from resispec.models.loading import load_model

EAGLE1_KEYS = {
    "fc.weight",
    "fc.bias",
    "embed_tokens.weight",
    "layers.0.self_attn.q_proj.weight",
    "layers.0.self_attn.k_proj.weight",
    "layers.0.self_attn.v_proj.weight",
    "layers.0.self_attn.o_proj.weight",
    "layers.0.mlp.gate_proj.weight",
    "layers.0.mlp.up_proj.weight",
    "layers.0.mlp.down_proj.weight",
    "layers.0.post_attention_layernorm.weight",
}


@pytest.fixture(scope="module")
def target(tiny_target):
    return load_model(tiny_target)


def _head(target, seed=0):
    return eagle_head.new_eagle_head(target, torch.Generator().manual_seed(seed)).eval()


def _inputs(target, length=10, seed=3):
    ids = torch.randint(0, 256, (2, length + 1), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        features = target(input_ids=ids, output_hidden_states=True).hidden_states[-1]  # [2, L+1, H]
    return ids[:, 1:], features[:, :-1]


def test_save_load_round_trip_in_eagle1_layout(target, tmp_path):
    head = _head(target)
    eagle_head.save_eagle_head(head, tmp_path / "head")
    state = torch.load(tmp_path / "head" / "pytorch_model.bin", weights_only=True)
    assert set(state) == EAGLE1_KEYS
    config = json.loads((tmp_path / "head" / "config.json").read_text())
    assert config["num_hidden_layers"] == 1 and config["hidden_size"] == target.config.hidden_size
    assert config["model_type"] == "llama" and config["vocab_size"] == target.config.vocab_size
    loaded = eagle_head.load_eagle_head(tmp_path / "head", target)
    tokens, features = _inputs(target)
    with torch.no_grad():
        for a, b in zip(head(tokens, features), loaded(tokens, features), strict=True):
            torch.testing.assert_close(a, b)
    assert loaded.lm_head is target.get_output_embeddings()  # the target's frozen LM head, shared


def test_published_style_checkpoint_loads(target, tmp_path):
    """A checkpoint as published (fp16, Llama-2 style config without head_dim/rope_theta, no embedding)."""
    hidden, inter = target.config.hidden_size, target.config.intermediate_size
    heads = target.config.num_attention_heads
    generator = torch.Generator().manual_seed(5)
    shapes = {
        "fc.weight": (hidden, 2 * hidden),
        "fc.bias": (hidden,),
        "layers.0.self_attn.q_proj.weight": (hidden, hidden),
        "layers.0.self_attn.k_proj.weight": (hidden, hidden),
        "layers.0.self_attn.v_proj.weight": (hidden, hidden),
        "layers.0.self_attn.o_proj.weight": (hidden, hidden),
        "layers.0.mlp.gate_proj.weight": (inter, hidden),
        "layers.0.mlp.up_proj.weight": (inter, hidden),
        "layers.0.mlp.down_proj.weight": (hidden, inter),
        "layers.0.post_attention_layernorm.weight": (hidden,),
    }
    state = {k: (torch.randn(s, generator=generator) * 0.02).half() for k, s in shapes.items()}
    config = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": hidden,
        "intermediate_size": inter,
        "num_attention_heads": heads,
        "num_key_value_heads": heads,
        "num_hidden_layers": 1,
        "rms_norm_eps": 1e-6,
        "vocab_size": target.config.vocab_size,
        "torch_dtype": "float16",
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    torch.save(state, tmp_path / "pytorch_model.bin")
    head = eagle_head.load_eagle_head(tmp_path, target)
    torch.testing.assert_close(head.embed_tokens.weight, target.get_input_embeddings().weight)
    torch.testing.assert_close(head.fc.weight, state["fc.weight"].float())
    tokens, features = _inputs(target)
    out_features, logits = head(tokens, features)
    assert out_features.shape == features.shape and logits.shape == (*tokens.shape, target.config.vocab_size)


def test_missing_files_and_keys_are_named(target, tmp_path):
    with pytest.raises(ValueError, match="config.json"):
        eagle_head.load_eagle_head(tmp_path, target)
    eagle_head.save_eagle_head(_head(target), tmp_path)
    state = torch.load(tmp_path / "pytorch_model.bin", weights_only=True)
    del state["layers.0.mlp.up_proj.weight"]
    torch.save(state, tmp_path / "pytorch_model.bin")
    with pytest.raises(ValueError, match="up_proj"):
        eagle_head.load_eagle_head(tmp_path, target)


def test_incremental_cache_equals_full_forward(target):
    head = _head(target)
    tokens, features = _inputs(target)
    cache = eagle_head.EagleCache()
    with torch.no_grad():
        full_features, full_logits = head(tokens, features)
        first = head(tokens[:, :6], features[:, :6], cache)
        second = head(tokens[:, 6:], features[:, 6:], cache)
    assert len(cache) == tokens.shape[1]
    torch.testing.assert_close(torch.cat([first[0], second[0]], 1), full_features, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(torch.cat([first[1], second[1]], 1), full_logits, atol=1e-4, rtol=1e-4)
    cache.crop(4)
    assert len(cache) == 4 and cache.layers[0].keys.shape[2] == 4


def test_tree_mask_isolates_siblings(target):
    """Two sibling nodes after a cached prefix: each attends to the prefix and itself only, so each
    equals a separate causal forward of prefix + that node."""
    head = _head(target)
    tokens, features = _inputs(target, length=7)
    with torch.no_grad():
        cache = eagle_head.EagleCache()
        head(tokens[:, :5], features[:, :5], cache)
        mask = torch.tensor([[True] * 5 + [True, False], [True] * 5 + [False, True]])[None, None]
        positions = torch.full((2, 2), 5)
        tree_feats, _ = head(
            tokens[:, 5:7], features[:, 5:7], cache, position_ids=positions, attention_mask=mask
        )
        for node in (5, 6):
            idx = [0, 1, 2, 3, 4, node]
            alone, _ = head(tokens[:, idx], features[:, idx])
            torch.testing.assert_close(tree_feats[:, node - 5], alone[:, -1], atol=1e-5, rtol=1e-5)


def test_tiny_head_training_raises_acceptance(tiny_target, tiny_tokens, tmp_path):
    report = eagle_training.train(
        tiny_target,
        tmp_path / "eagle",
        token_ids=tiny_tokens[:10],
        heldout=tiny_tokens[10:],
        steps=100,
        seq_len=32,
        batch_size=8,
        lr=3e-3,
        seed=0,
        amp=False,
    )
    assert report["loss_last"] < 0.5 * report["loss_first"]
    assert report["acceptance"]["1.0"] > report["acceptance_before"]["1.0"] + 0.2
    assert report["cost"]["steps"] == 100 and report["cost"]["train_tokens"] == 100 * 8 * 32
    assert 0 < report["compute_ratio"] < 1
    target = load_model(tiny_target)
    head = eagle_head.load_eagle_head(tmp_path / "eagle", target)
    again = eagle_training.measure_acceptances(target, head, tiny_tokens[10:], [1.0])[1.0]
    assert again == pytest.approx(report["acceptance"]["1.0"], abs=1e-5)


def test_eagle_checkpoints_are_told_from_causal_lms(target, tiny_target, tmp_path):
    eagle_head.save_eagle_head(_head(target), tmp_path / "head")
    assert eagle_head.is_eagle_checkpoint(tmp_path / "head")
    assert not eagle_head.is_eagle_checkpoint(tiny_target)  # safetensors, 4 layers
    target.save_pretrained(tmp_path / "bin", safe_serialization=False)
    assert not eagle_head.is_eagle_checkpoint(tmp_path / "bin")


def test_reduced_vocabulary_head_trains_saves_and_loads(tiny_target, tiny_tokens, tmp_path):
    common = dict(
        token_ids=tiny_tokens[:10], heldout=tiny_tokens[10:], steps=30, seq_len=32, lr=3e-3, amp=False
    )
    full = eagle_training.train(tiny_target, tmp_path / "full", **common)
    report = eagle_training.train(tiny_target, tmp_path / "eagle", vocab=64, **common)
    assert report["compute_ratio"] < full["compute_ratio"] and report["vocab"] == 64
    assert eagle_head.is_eagle_checkpoint(tmp_path / "eagle")
    target = load_model(tiny_target)
    head = eagle_head.load_eagle_head(tmp_path / "eagle", target)
    tokens, features = _inputs(target)
    with torch.no_grad():
        _, logits = head(tokens, features)  # [1, S, V]
    kept = head.lm_head.token_ids
    assert kept.numel() == 64 and torch.isfinite(logits[..., kept]).all()
    assert int(torch.isneginf(logits).sum()) == logits.shape[:2].numel() * (target.config.vocab_size - 64)
    torch.testing.assert_close(head.lm_head.weight, target.get_output_embeddings().weight[kept])
    again = eagle_training.measure_acceptances(target, head, tiny_tokens[10:], [1.0])[1.0]
    assert again == pytest.approx(report["acceptance"]["1.0"], abs=1e-5)
