"""Tiny randomly initialised Llama models for the tests (CPU, fixed seeds); importable from every test
directory (pytest puts tests/ on the path for its conftest.py)."""

import torch


def tiny_llama(seed: int, vocab: int = 12, init: float = 0.3, eos: int | None = None):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        initializer_range=init,
        bos_token_id=0,
        eos_token_id=eos,
        pad_token_id=0,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).eval()
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = 0
    return model
