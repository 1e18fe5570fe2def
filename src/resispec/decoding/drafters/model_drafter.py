"""A small causal LM as drafter, with its own KV cache."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from resispec.decoding.drafters.base import Drafter, DraftTree, process_logits
from resispec.decoding.drafters.tree_drafting import draft_levels
from resispec.decoding.kv_cache import cache_length, keep_positions
from resispec.decoding.layout import tree_layout
from resispec.decoding.tree_attention import model_dtype, tree_position_ids

__all__ = ["ModelDrafter"]


class ModelDrafter(Drafter):
    """Drafts with a Hugging Face causal LM sharing the target's tokenizer.

    Cache invariant between steps: the cache holds a prefix of the committed sequence; the rest
    (at least the root) is forwarded causally at the start of ``propose``.
    """

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.reset()

    def reset(self) -> None:
        from transformers import DynamicCache

        self.cache = DynamicCache(config=self.model.config)
        self._prefix_len: int | None = None  # committed length at the last proposal
        self._forwarded = 0

    @torch.no_grad()
    def propose(self, committed_ids, tree, *, draws, temperature, generator) -> DraftTree:
        pending = committed_ids[cache_length(self.cache) :]  # [m >= 1], ends with the root
        if len(pending) == 0:
            raise ValueError("committed_ids: the drafter cache already covers the root token")
        out = self.model(input_ids=pending[None], cache=self.cache, use_cache=True, logits_to_keep=1)
        root_probs = process_logits(out.logits[0, -1], temperature)  # [V]
        prefix_len = len(committed_ids)
        layout = tree_layout(tree, committed_ids.device)
        dtype = model_dtype(self.model)

        def forward_level(depth: int, nodes: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
            mask = layout.mask(depth, dtype)(prefix_len)  # prefix + drafted nodes in cache + this level
            positions = tree_position_ids(layout.depths, nodes, prefix_len - 1)
            logits = self.model(
                input_ids=tokens[None], attention_mask=mask, position_ids=positions, cache=self.cache
            ).logits[0]  # [Q, V]
            return process_logits(logits, temperature)

        draft, self._forwarded = draft_levels(
            layout, int(committed_ids[-1]), root_probs, forward_level, draws=draws, generator=generator
        )
        self._prefix_len = prefix_len
        return draft

    def update(self, committed_ids, accepted_nodes: Sequence[int], target_features=None) -> None:
        if self._prefix_len is None:
            return
        in_cache = [self._prefix_len + n - 1 for n in accepted_nodes if 0 < n < self._forwarded]
        device = committed_ids.device
        keep = torch.cat(
            [
                torch.arange(self._prefix_len, device=device),
                torch.tensor(in_cache, dtype=torch.long, device=device),
            ]
        )  # cache slots of the committed prefix + the forwarded accepted nodes
        keep_positions(self.cache, keep)
        self._prefix_len = None
