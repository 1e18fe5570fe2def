"""Preallocated (static) KV caches and fixed-width attention masks for tree decoding.

A :class:`StaticKV` holds every layer's keys and values in buffers [batch, kv_heads, capacity, head_dim]
allocated once (on the first write, with the model's dtype and device) and reused for every step of a
generation and for later generations of the same model: a forward writes its new positions in place at the
slots ``write`` (a long device tensor the engine fills before each forward), attention reads the whole
buffer under a mask of fixed width ``capacity``, and the engine keeps the cache's length on the host
(``length``). Every layer's keys and values are views of one buffer [layers, 2, batch, kv_heads, capacity,
head_dim] when their shapes agree (they do in the models the engine runs), so cutting the cache to the
accepted path is one gather and one indexed copy of the accepted slots for the whole cache (``compact``):
no per-layer kernels, no ``torch.cat``, the same addresses every step (what CUDA graphs need). It speaks
both protocols the engine's models use: Hugging Face's ``update(key, value, layer_idx, ...)`` and the
EAGLE head's ``append(key, value)`` (one layer).

A :class:`FixedMask` is an attention mask [1, 1, Q, capacity] for Q fixed query nodes: columns ``[0,
offset)`` (the committed prefix) attend, ``[offset, offset + K)`` hold a fixed tree part [Q, K], the rest
is blocked. Moving the offset rewrites only the columns that change.
"""

from __future__ import annotations

import torch

__all__ = ["StaticKV", "FixedMask", "causal_mask", "blocked_value"]


def blocked_value(dtype: torch.dtype):
    """The mask value of a blocked key: False for boolean masks, the dtype's minimum for additive ones."""
    return False if dtype == torch.bool else torch.finfo(dtype).min


def _attend_value(dtype: torch.dtype):
    return True if dtype == torch.bool else 0.0


class StaticKV:
    """A static KV cache for ``num_layers`` layers of ``capacity`` positions (see the module docstring)."""

    is_compileable = True

    def __init__(self, capacity: int, num_layers: int) -> None:
        self.capacity, self.num_layers = capacity, num_layers
        # per layer, as transformers' mask helpers read it (5.0-5.23 look for a full-attention layer)
        self.is_sliding = [False] * num_layers
        self.keys: list[torch.Tensor | None] = [None] * num_layers
        self.values: list[torch.Tensor | None] = [None] * num_layers
        self.buffer: torch.Tensor | None = None  # [layers, 2, B, h, capacity, d]: all keys and values
        self.length = 0  # positions 0..length-1 hold the cached sequence (host-side count)
        self.write: torch.Tensor | None = None  # long [Q]: slots the next forward writes

    def __len__(self) -> int:
        return self.length

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.length

    def get_max_cache_shape(self, layer_idx: int = 0) -> int:
        return self.capacity

    def _allocate(self, key: torch.Tensor, value: torch.Tensor) -> None:
        """Every layer's buffers at the first write, from its shapes: views of one tensor [layers, 2, batch,
        kv_heads, capacity, head_dim] when keys and values agree in shape, else one pair per layer."""
        batch, heads, _, _ = key.shape
        if value.shape == key.shape:
            self.buffer = key.new_zeros(self.num_layers, 2, batch, heads, self.capacity, key.shape[-1])
            self.keys = list(self.buffer[:, 0].unbind(0))
            self.values = list(self.buffer[:, 1].unbind(0))
        else:
            shape = (batch, heads, self.capacity)
            self.keys = [key.new_zeros(*shape, key.shape[-1]) for _ in range(self.num_layers)]
            self.values = [value.new_zeros(*shape, value.shape[-1]) for _ in range(self.num_layers)]
        if not torch.compiler.is_compiling():
            for tensor in [self.buffer, *self.keys, *self.values]:
                if tensor is not None:
                    torch._dynamo.mark_static_address(tensor)

    def _buffers(self, layer: int, key: torch.Tensor, value: torch.Tensor):
        if self.keys[layer] is None:
            self._allocate(key, value)
        return self.keys[layer], self.values[layer]

    def update(self, key_states, value_states, layer_idx: int, *args, **kwargs):
        """Hugging Face protocol: write [B, h, Q, d] at the slots ``write``; returns the whole buffers."""
        keys, values = self._buffers(layer_idx, key_states, value_states)
        keys.index_copy_(2, self.write, key_states)
        values.index_copy_(2, self.write, value_states)
        return keys, values

    def append(self, key_states, value_states):
        """EAGLE head protocol (one layer)."""
        return self.update(key_states, value_states, 0)

    @property
    def layers(self) -> list:
        return [self]

    def compact(self, source: torch.Tensor, start: int) -> None:
        """Copy the slots ``source`` (long [M], device) to ``start..start+M-1`` in every layer, in place: one
        gather and one indexed copy for the whole cache (per layer when its buffers are separate)."""
        target = torch.arange(start, start + source.shape[0], device=source.device)
        if self.buffer is not None:
            self.buffer.index_copy_(4, target, self.buffer.index_select(4, source))
            return
        for keys, values in zip(self.keys, self.values, strict=True):
            if keys is not None:
                keys.index_copy_(2, target, keys.index_select(2, source))
                values.index_copy_(2, target, values.index_select(2, source))

    def crop(self, length: int) -> None:
        """Keep the first ``length`` positions, or drop the last ``-length`` when negative (as Hugging Face
        caches do); the buffers are not touched."""
        self.length = max(self.length + length, 0) if length < 0 else min(self.length, length)


class FixedMask:
    """Attention mask [1, 1, Q, capacity] with a movable prefix (see the module docstring).

    tree_part: bool [Q, K] (True = attend); dtype: torch.bool or the model's float dtype (additive).
    """

    def __init__(self, tree_part: torch.Tensor, capacity: int, dtype: torch.dtype) -> None:
        queries, self.width = tree_part.shape
        self.dtype = dtype
        attend, blocked = _attend_value(dtype), blocked_value(dtype)
        values = torch.full(tree_part.shape, blocked, dtype=dtype, device=tree_part.device)
        self.tree_part = values.masked_fill(tree_part, attend)  # [Q, K]
        self.buffer = torch.full((1, 1, queries, capacity), blocked, dtype=dtype, device=tree_part.device)
        self.offset: int | None = None

    def at(self, offset: int) -> torch.Tensor:
        """The mask with the tree part at columns ``offset..offset+K-1``: the buffer itself, [1, 1, Q, C]."""
        if offset + self.width > self.buffer.shape[-1]:
            raise ValueError(
                f"offset {offset} + {self.width} tree keys exceed the capacity {self.buffer.shape[-1]}"
            )
        if offset != self.offset:
            if self.offset is None or offset < self.offset:
                self.buffer.fill_(blocked_value(self.dtype))
                self.buffer[..., :offset] = _attend_value(self.dtype)
            else:
                self.buffer[..., self.offset : offset] = _attend_value(self.dtype)
            self.buffer[0, 0, :, offset : offset + self.width] = self.tree_part
            self.offset = offset
        return self.buffer


def causal_mask(start: int, queries: int, capacity: int, dtype: torch.dtype, device) -> torch.Tensor:
    """Mask [1, 1, Q, capacity] of Q consecutive positions start..start+Q-1 over a static cache: query i
    attends to slots 0..start+i."""
    columns = torch.arange(capacity, device=device)
    rows = torch.arange(start, start + queries, device=device)
    allowed = columns[None, :] <= rows[:, None]  # [Q, C]
    if dtype == torch.bool:
        return allowed[None, None]
    mask = torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill_(~allowed, blocked_value(dtype))
    return mask[None, None]
