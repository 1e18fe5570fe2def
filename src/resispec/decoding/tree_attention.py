"""4-D additive attention masks and position ids for verifying or drafting a tree on top of a KV cache.

Key layout seen by the queries (the HF cache appends the new keys after the cached ones):
``[prefix_len committed tokens | tree nodes already in the cache (key_nodes) | query nodes]``.
A query node sees the whole committed prefix and, among tree nodes, exactly its ancestors and itself.
"""

from __future__ import annotations

import torch

__all__ = ["PrefixMask", "tree_mask", "tree_position_ids", "model_dtype", "model_device"]


def tree_mask(
    ancestors: torch.Tensor,
    query_nodes: torch.Tensor,
    key_nodes: torch.Tensor,
    prefix_len: int,
    dtype: torch.dtype,
) -> torch.Tensor:
    """Additive float mask [1, 1, Q, prefix_len + K + Q] (0 = attend, dtype min = blocked), or a
    boolean mask (True = attend) when ``dtype`` is ``torch.bool``.

    ancestors: bool [N, N] (``ancestors[i, j]``: j is i or an ancestor of i);
    query_nodes: long [Q] tree node ids being forwarded; key_nodes: long [K] tree node ids already cached
    (after the prefix), in cache order.
    """
    device = ancestors.device
    all_keys = torch.cat([key_nodes.to(device), query_nodes.to(device)])  # [K + Q]
    tree_part = ancestors[query_nodes.to(device)][:, all_keys]  # [Q, K + Q]
    prefix_part = torch.ones(len(query_nodes), prefix_len, dtype=torch.bool, device=device)  # [Q, P]
    allowed = torch.cat([prefix_part, tree_part], dim=1)  # [Q, P + K + Q]
    if dtype == torch.bool:
        return allowed[None, None]
    mask = torch.zeros(allowed.shape, dtype=dtype, device=device)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[None, None]


class PrefixMask:
    """``tree_mask`` for fixed query and key nodes on a prefix of any length, built once: one buffer
    [Q, capacity + K + Q] whose prefix columns attend, sliced per call (a view, no per-step construction);
    the buffer doubles when a longer prefix comes."""

    def __init__(
        self,
        ancestors: torch.Tensor,
        query_nodes: torch.Tensor,
        key_nodes: torch.Tensor,
        dtype: torch.dtype,
        capacity: int = 256,
    ) -> None:
        self.tree_part = tree_mask(ancestors, query_nodes, key_nodes, 0, dtype)[0, 0]  # [Q, K + Q]
        self.capacity, self.buffer = 0, None
        self._grow(capacity)

    def _grow(self, capacity: int) -> None:
        queries, tree_keys = self.tree_part.shape
        fill = True if self.tree_part.dtype == torch.bool else 0.0
        prefix = self.tree_part.new_full((queries, capacity), fill)
        self.capacity, self.buffer = capacity, torch.cat([prefix, self.tree_part], dim=1)

    def __call__(self, prefix_len: int) -> torch.Tensor:
        """The mask [1, 1, Q, prefix_len + K + Q]."""
        if prefix_len > self.capacity:
            self._grow(max(2 * self.capacity, prefix_len))
        return self.buffer[:, self.capacity - prefix_len :][None, None]


def tree_position_ids(depths: torch.Tensor, query_nodes: torch.Tensor, root_position: int) -> torch.Tensor:
    """Position ids [1, Q]: the root sits at ``root_position`` and a node at depth d at root_position + d."""
    return (depths[query_nodes] + root_position)[None]


def model_dtype(model: torch.nn.Module) -> torch.dtype:
    """Floating dtype of a model's parameters (used for its attention masks)."""
    for param in model.parameters():
        if param.is_floating_point():
            return param.dtype
    return torch.float32


def model_device(model: torch.nn.Module) -> torch.device:
    """Device of a model's first parameter."""
    return next(model.parameters()).device
