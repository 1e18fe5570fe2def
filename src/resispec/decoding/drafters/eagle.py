"""EAGLE-1 style drafter: a feature-level head fed with the target's last hidden states.

Head protocol (``resispec.models.eagle_head.EagleHead`` or any module with the same call)::

    head(token_ids LongTensor[1, Q], target_features Tensor[1, Q, H], cache, *,
         position_ids=LongTensor[1, Q], attention_mask=BoolTensor[1, 1, Q, K] | None)
        -> (features Tensor[1, Q, H], logits Tensor[1, Q, V])

``cache`` is extended in place by the call; it is an HF ``Cache`` or any object with ``len()`` and
``crop(length)`` (``resispec.models.eagle_head.EagleCache``, the default).
``attention_mask``: True = attend, over [cached positions | new positions]; None = causal.

Pair i of the head's sequence is (target feature at position i, token at position i + 1); its output
feature predicts position i + 1's feature and its logits the token at position i + 2. Committed pairs use
the target's true features; drafted tree nodes use the head's own predicted feature of their parent.
After verification the head cache is cut back to committed pairs and the accepted tokens are re-fed
with the target's true features (as in EAGLE).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from resispec.decoding.drafters.base import Drafter, DraftTree, process_logits
from resispec.decoding.drafters.tree_drafting import draft_levels
from resispec.decoding.kv_cache import cache_length, crop_to
from resispec.decoding.layout import tree_layout
from resispec.decoding.tree_attention import tree_position_ids

__all__ = ["EagleDrafter"]


def _default_call(head, token_ids, features, cache, position_ids, attention_mask):
    return head(token_ids, features, cache, position_ids=position_ids, attention_mask=attention_mask)


def _default_cache():
    from resispec.models.eagle_head import EagleCache

    return EagleCache()


class EagleDrafter(Drafter):
    """Drafter around an EAGLE head; ``call`` adapts a head with a different keyword signature."""

    needs_target_features = True

    def __init__(self, head: torch.nn.Module, call: Callable | None = None, cache_factory=None) -> None:
        self.head = head
        self._call = call or _default_call
        self._cache_factory = cache_factory
        self.reset()

    def reset(self) -> None:
        self.cache = (self._cache_factory or _default_cache)()
        self._tail: torch.Tensor | None = None  # target features [n, H] of positions tail_start..L-2
        self._tail_start = 0  # features before it are already in the head's cache
        self._num_pairs: int | None = None

    def _features(self, start: int, stop: int) -> torch.Tensor:
        """Target features of positions start..stop-1 [stop - start, H]; forgets those before start."""
        if self._tail is None:
            raise ValueError(
                "target_features: the EAGLE drafter was given no target features (prompt too short?)"
            )
        available = self._tail_start + len(self._tail)
        if available != stop:
            raise ValueError(f"target_features: have {available} positions, need {stop}")
        self._tail, self._tail_start = self._tail[start - self._tail_start :], start
        return self._tail

    def _run(self, tokens, features, positions, mask):
        out_features, logits = self._call(
            self.head, tokens[None], features[None], self.cache, positions, mask
        )
        return out_features[0], logits[0]  # [Q, H], [Q, V]

    @torch.no_grad()
    def propose(self, committed_ids, tree, *, draws, temperature, generator) -> DraftTree:
        num_pairs = len(committed_ids) - 1  # pairs (f_i, x_{i+1}) for i = 0..L-2
        start = cache_length(self.cache)
        features = self._features(start, num_pairs)  # [m, H]
        positions = torch.arange(start, num_pairs, device=committed_ids.device)[None]  # [1, m]
        root_features, root_logits = self._run(committed_ids[start + 1 :], features, positions, None)
        layout = tree_layout(tree, committed_ids.device)
        node_features = root_features.new_empty(tree.num_nodes, root_features.shape[-1])  # [N, H]
        node_features[0] = root_features[-1]

        def forward_level(depth: int, nodes: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
            mask = layout.mask(depth, torch.bool)(num_pairs)  # pairs + drafted nodes in cache + level
            pos = tree_position_ids(layout.depths, nodes, num_pairs - 1)
            feats, logits = self._run(tokens, node_features[layout.parents[nodes]], pos, mask)
            node_features[nodes] = feats
            return process_logits(logits, temperature)

        draft, _ = draft_levels(
            layout,
            int(committed_ids[-1]),
            process_logits(root_logits[-1], temperature),
            forward_level,
            draws=draws,
            generator=generator,
        )
        self._num_pairs = num_pairs
        return draft

    def update(self, committed_ids, accepted_nodes: Sequence[int], target_features=None) -> None:
        if target_features is None:
            raise ValueError("target_features: the EAGLE drafter needs the target's hidden states")
        features = target_features.detach()  # [n, H]
        self._tail = features if self._tail is None else torch.cat([self._tail, features])
        if self._num_pairs is not None:
            crop_to(self.cache, self._num_pairs)  # re-feed accepted tokens with true features
            self._num_pairs = None
