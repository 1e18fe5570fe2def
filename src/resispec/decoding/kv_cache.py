"""Cutting Hugging Face KV caches to the accepted path without recomputing the prefix."""

from __future__ import annotations

import inspect

import torch

__all__ = ["cache_length", "cache_kwargs", "cached_forward", "keep_positions", "crop_to"]


def cache_kwargs(model, cache) -> dict:
    """The keyword that hands ``cache`` to ``model``'s forward: ``cache`` (transformers >= 5.24) or
    ``past_key_values`` (5.0-5.23, e.g. the 5.17 of a GPU image), read from the forward's signature, so
    that the engine runs on whatever release a machine has; a wrapper taking neither gets ``cache``."""
    return {_cache_keyword(type(model)): cache}


def cached_forward(model, cache, **options):
    """``model``'s forward over ``cache``: (input_ids [1, Q], position_ids [1, Q], mask) -> the model's
    output, with ``use_cache`` on and ``options`` (``logits_to_keep``, ``output_hidden_states``) passed
    on; the engine's target, drafter and autoregressive baseline all call their models through it."""
    keyword = cache_kwargs(model, cache)

    def forward(input_ids, position_ids, mask):
        return model(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=position_ids,
            **keyword,
            use_cache=True,
            **options,
        )

    return forward


_KEYWORDS: dict[type, str] = {}


def _cache_keyword(kind: type) -> str:
    if kind not in _KEYWORDS:
        parameters = inspect.signature(kind.forward).parameters
        _KEYWORDS[kind] = (
            "past_key_values" if "past_key_values" in parameters and "cache" not in parameters else "cache"
        )
    return _KEYWORDS[kind]


def cache_length(cache) -> int:
    """Number of cached positions (0 for ``None`` or an empty cache); HF caches or ``len()``-caches."""
    if cache is None:
        return 0
    return int(cache.get_seq_length()) if hasattr(cache, "get_seq_length") else len(cache)


def crop_to(cache, length: int) -> None:
    """Keep the first ``length`` positions: HF caches (``crop(-removed)``) or caches with ``crop(length)``."""
    total = cache_length(cache)
    if length > total:
        raise ValueError(f"length {length} is beyond the cache length {total}")
    if hasattr(cache, "get_seq_length"):
        if length < total:
            cache.crop(length - total)  # transformers 5: negative = tokens to remove
    else:
        cache.crop(length)


def keep_positions(cache, keep: torch.Tensor) -> None:
    """Keep only the sequence positions ``keep`` (long [M], increasing) of every layer, in place.

    A contiguous prefix ``0..M-1`` uses ``cache.crop``; anything else gathers each layer's keys and
    values ([batch, heads, seq, head_dim]) along the sequence dimension.
    """
    total = cache_length(cache)
    keep = keep.to(torch.long)
    if len(keep) and int(keep.max()) >= total:
        raise ValueError(f"keep: position {int(keep.max())} is beyond the cache length {total}")
    if torch.equal(keep, torch.arange(len(keep), device=keep.device)):
        if len(keep) < total:
            cache.crop(len(keep) - total)  # transformers 5: negative = tokens to remove
        return
    for index, layer in enumerate(cache.layers):
        if getattr(layer, "is_sliding", False):
            raise ValueError(f"cache layer {index}: sliding-window layers cannot be gathered")
        if not getattr(layer, "is_initialized", True) or layer.keys is None:
            continue
        idx = keep.to(layer.keys.device)
        layer.keys = layer.keys.index_select(-2, idx)
        layer.values = layer.values.index_select(-2, idx)
