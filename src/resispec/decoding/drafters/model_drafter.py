"""A small causal LM as drafter, with its own static KV cache."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from resispec.decoding.compiled import CAPACITY_QUANTUM, maybe_compile, static_cache
from resispec.decoding.drafters.base import Drafter, DraftTree, process_logits
from resispec.decoding.drafters.tree_drafting import draft_levels
from resispec.decoding.kv_cache import cached_forward
from resispec.decoding.layout import tree_layout
from resispec.decoding.static_cache import causal_mask
from resispec.decoding.tree_attention import model_dtype

__all__ = ["ModelDrafter"]


class ModelDrafter(Drafter):
    """Drafts with a Hugging Face causal LM sharing the target's tokenizer.

    Cache (a :class:`~resispec.decoding.static_cache.StaticKV`): the committed prefix at slots 0..L-1
    (the root, the last committed token, at L-1) and drafted node n (above the last level) at slot L+n-1.
    Invariant between steps: the cache holds a prefix of the committed sequence; the rest (at least the
    root) is forwarded causally at the start of ``propose``. After verification the accepted nodes'
    slots are copied down behind the prefix (``update``), in place.
    """

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.capacity, self.compile_mode = 0, "none"
        self.reset()

    def configure(self, *, capacity: int, compile_mode: str = "none") -> None:
        self.capacity, self.compile_mode = capacity, compile_mode

    def reset(self) -> None:
        self.cache = None
        self._prefix_len: int | None = None  # committed length at the last proposal
        self._forwarded = 0

    def _ensure(self, needed: int) -> None:
        """A static cache of at least ``needed`` positions holding what the current one holds."""
        if self.cache is not None and self.cache.capacity >= needed:
            return
        length = 0 if self.cache is None else self.cache.length
        if length:  # outgrown outside the engine (the engine configures the capacity): re-forward
            raise ValueError(
                f"capacity: the drafter's cache holds {self.cache.capacity} positions, need {needed}"
            )
        size = max(needed, self.capacity, CAPACITY_QUANTUM)
        self.cache = static_cache(self.model, "draft", size)

    def _runner(self, key, head_rows: int):
        """The forward (input_ids, position_ids, mask) -> logits [Q, V] (the last ``head_rows`` rows)."""
        model, cache = self.model, self.cache
        forward = cached_forward(model, cache, logits_to_keep=head_rows)

        def call(input_ids, position_ids, mask):
            return forward(input_ids, position_ids, mask).logits[0]

        return maybe_compile(self.model, ("draft", key, head_rows, id(cache)), call, self.compile_mode)

    @torch.no_grad()
    def propose(self, committed_ids, tree, *, draws, temperature, generator) -> DraftTree:
        prefix_len = len(committed_ids)
        if self.cache is None or self.cache.length == 0:
            self._ensure(prefix_len + tree.num_nodes)
        start = self.cache.length
        if start >= prefix_len:
            raise ValueError("committed_ids: the drafter cache already covers the root token")
        device, dtype, capacity = committed_ids.device, model_dtype(self.model), self.cache.capacity
        if prefix_len + tree.num_nodes > capacity:
            raise ValueError(f"capacity: {prefix_len} tokens + {tree.num_nodes} nodes exceed {capacity}")
        self.cache.write = torch.arange(start, prefix_len, device=device)  # [m]: the pending tokens
        pending = prefix_len - start
        mask = causal_mask(start, pending, capacity, dtype, device)
        key = ("pending", pending) if pending <= tree.depth else None  # prompt-sized: eager
        run = self._runner(key, 1) if key else self._eager(1)
        pending_ids = committed_ids[start:].view(1, pending)  # [1, m], strides (m, 1): fixed per key
        root_probs = process_logits(run(pending_ids, self.cache.write[None], mask)[-1], temperature)
        self.cache.length = prefix_len
        layout = tree_layout(tree, device)

        def forward_level(depth: int, nodes: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
            self.cache.write = nodes + (prefix_len - 1)  # node n at slot L + n - 1
            mask = layout.fixed_mask(depth, dtype, capacity).at(prefix_len)
            positions = (layout.depths[nodes] + (prefix_len - 1))[None]
            logits = self._runner(("level", tree.parents, depth), 0)(tokens[None], positions, mask)  # [Q, V]
            return process_logits(logits, temperature)

        draft, self._forwarded = draft_levels(
            layout, committed_ids[-1:], root_probs, forward_level, draws=draws, generator=generator
        )
        self._prefix_len = prefix_len
        return draft

    @torch.no_grad()
    def warm_up(self, tree, prompt: torch.Tensor) -> None:
        """Each compiled forward once: a proposal for every pending length 1..depth (committed tokens
        not yet in the cache after a step), on top of ``prompt`` (token values do not matter)."""
        self.reset()
        self._ensure(len(prompt) + tree.depth + tree.num_nodes)
        ids = torch.cat([prompt, prompt[-1:].repeat(tree.depth)])
        generator = torch.Generator(device=prompt.device).manual_seed(0)
        # the prompt's eager forward first, as in a generation: the buffers exist before any graph
        self.propose(prompt, tree, draws="with_replacement", temperature=1.0, generator=generator)
        for pending in range(1, tree.depth + 1):
            self.cache.length = len(prompt) - 1
            self.propose(
                ids[: len(prompt) - 1 + pending],
                tree,
                draws="with_replacement",
                temperature=1.0,
                generator=generator,
            )
        self.reset()

    def _eager(self, head_rows: int):
        mode, self.compile_mode = self.compile_mode, "none"
        try:
            return self._runner(None, head_rows)
        finally:
            self.compile_mode = mode

    def update(self, committed_ids, accepted_nodes: Sequence[int], target_features=None) -> None:
        if self._prefix_len is None:
            return
        prefix_len = self._prefix_len
        kept = [n for n in accepted_nodes if 0 < n < self._forwarded]  # a prefix of the accepted path
        if kept:
            padded = getattr(accepted_nodes, "padded", None)
            if padded is None:  # called outside the engine with a plain list
                padded = torch.tensor(kept, dtype=torch.long, device=committed_ids.device)
            self.cache.compact(padded[: len(kept)] + (prefix_len - 1), prefix_len)
        self.cache.length = prefix_len + len(kept)
        self._prefix_len = None
