"""EAGLE-1 style drafter: a feature-level head fed with the target's last hidden states.

Head protocol (``resispec.models.eagle_head.EagleHead`` or any module with the same call)::

    head(token_ids LongTensor[1, Q], target_features Tensor[1, Q, H], cache, *,
         position_ids=LongTensor[1, Q], attention_mask=BoolTensor[1, 1, Q, K] | None)
        -> (features Tensor[1, Q, H], logits Tensor[1, Q, V])

``cache`` is extended in place by the call. By default it is a static cache
(:class:`~resispec.decoding.static_cache.StaticKV`: the head writes at the slots the drafter sets, masks
have the cache's fixed width); a ``cache_factory`` may give an HF ``Cache`` or any object with ``len()``
and ``crop(length)`` that grows (``resispec.models.eagle_head.EagleCache``), with masks over
[cached positions | new positions].
``attention_mask``: True = attend; None = causal.

Pair i of the head's sequence is (target feature at position i, token at position i + 1); its output
feature predicts position i + 1's feature and its logits the token at position i + 2. Committed pairs use
the target's true features; drafted tree nodes use the head's own predicted feature of their parent.
After verification the head cache is cut back to committed pairs and the accepted tokens are re-fed
with the target's true features (as in EAGLE).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from resispec.decoding.compiled import maybe_compile, static_cache
from resispec.decoding.drafters.base import Drafter, DraftTree, process_logits
from resispec.decoding.drafters.tree_drafting import draft_levels
from resispec.decoding.kv_cache import cache_length, crop_to
from resispec.decoding.layout import tree_layout
from resispec.decoding.static_cache import causal_mask
from resispec.decoding.tree_attention import tree_position_ids

__all__ = ["EagleDrafter"]


def _default_call(head, token_ids, features, cache, position_ids, attention_mask):
    return head(token_ids, features, cache, position_ids=position_ids, attention_mask=attention_mask)


STATIC_CAPACITY = 1024  # positions of the static cache when the engine does not configure one


class EagleDrafter(Drafter):
    """Drafter around an EAGLE head; ``call`` adapts a head with a different keyword signature."""

    needs_target_features = True

    def __init__(self, head: torch.nn.Module, call: Callable | None = None, cache_factory=None) -> None:
        self.head = head
        self._call = call or _default_call
        self._cache_factory = cache_factory
        self.capacity, self.compile_mode = STATIC_CAPACITY, "none"
        self.reset()

    def configure(self, *, capacity: int, compile_mode: str = "none") -> None:
        self.capacity, self.compile_mode = capacity, compile_mode

    @property
    def static(self) -> bool:
        return self._cache_factory is None

    def reset(self) -> None:
        self.cache = (
            static_cache(self.head, "eagle", self.capacity, 1) if self.static else self._cache_factory()
        )
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

    def _run(self, tokens, features, positions, mask, key=None):
        """The head on tokens [Q] with features [Q, H]: (features [Q, H], logits [Q, V]); ``key`` names a
        fixed-shape call that may be compiled."""
        head, call, cache = self.head, self._call, self.cache

        def run(tokens, features, positions, mask):
            out_features, logits = call(head, tokens[None], features[None], cache, positions, mask)
            return out_features[0], logits[0]  # [Q, H], [Q, V]

        mode = self.compile_mode if key is not None and self.static else "none"
        return maybe_compile(self.head, ("eagle", key, id(cache)), run, mode)(
            tokens, features, positions, mask
        )

    @torch.no_grad()
    def propose(self, committed_ids, tree, *, draws, temperature, generator) -> DraftTree:
        num_pairs = len(committed_ids) - 1  # pairs (f_i, x_{i+1}) for i = 0..L-2
        start = cache_length(self.cache)
        features = self._features(start, num_pairs)  # [m, H]
        device = committed_ids.device
        positions = torch.arange(start, num_pairs, device=device)[None]  # [1, m]
        mask, key = None, None
        if self.static:
            if num_pairs + tree.num_nodes > self.cache.capacity:
                raise ValueError(
                    f"capacity: {num_pairs} pairs + {tree.num_nodes} nodes exceed {self.cache.capacity}"
                )
            self.cache.write, pending = positions[0], num_pairs - start
            mask = causal_mask(start, pending, self.cache.capacity, torch.bool, device)
            key = ("pending", pending) if pending <= tree.depth else None
        pending_ids = committed_ids[start + 1 :].clone()  # fresh strides for a compiled call
        root_features, root_logits = self._run(pending_ids, features, positions, mask, key)
        if self.static:
            self.cache.length = num_pairs
        layout = tree_layout(tree, device)
        node_features = root_features.new_empty(tree.num_nodes, root_features.shape[-1])  # [N, H]
        node_features[0] = root_features[-1]

        def forward_level(depth: int, nodes: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
            if self.static:  # node n at slot pairs + n - 1
                self.cache.write = nodes + (num_pairs - 1)
                mask = layout.fixed_mask(depth, torch.bool, self.cache.capacity).at(num_pairs)
            else:
                mask = layout.mask(depth, torch.bool)(num_pairs)  # pairs + drafted nodes in cache + level
            pos = tree_position_ids(layout.depths, nodes, num_pairs - 1)
            parents = node_features[layout.parents[nodes]]
            feats, logits = self._run(tokens, parents, pos, mask, ("level", tree.parents, depth))
            node_features[nodes] = feats
            return process_logits(logits, temperature)

        draft, _ = draft_levels(
            layout,
            committed_ids[-1:],
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
