"""Compute cost of decoder models, counted as multiply-accumulates (MACs) per generated token.

Every weight matrix of the decoder layers (attention projections and MLP) plus the LM head counts; the
embedding lookup is free. A reduced-vocabulary draft (`draft_vocab_size` in its config) pays for its V'
head rows only. Attention scores and values add `2 * context_len * heads * head_dim` per layer
(0 by default; pass a context length to include them).
"""

from __future__ import annotations


def per_token_macs(config, context_len: int = 0) -> int:
    """MACs per token of a Llama-style decoder config: layer weight matrices + LM head (+ attention)."""
    hidden, layers = config.hidden_size, config.num_hidden_layers
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    attn = hidden * head_dim * (2 * heads + 2 * kv_heads)  # q, o and k, v projections
    mlp = 3 * hidden * config.intermediate_size  # gate, up, down
    scores = 2 * context_len * heads * head_dim
    head_rows = getattr(config, "draft_vocab_size", None) or config.vocab_size
    return layers * (attn + mlp + scores) + hidden * head_rows


def compute_ratio(draft_config, target_config, context_len: int = 0) -> float:
    """The draft's per-token MACs as a fraction of the target's."""
    return per_token_macs(draft_config, context_len) / per_token_macs(target_config, context_len)
