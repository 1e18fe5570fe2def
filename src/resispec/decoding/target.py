"""The target side of a verification step: its KV cache and one forward over the drafted tree.

Invariant between steps: the target's cache holds every committed token but the last one (the root of
the next tree), so each step forwards exactly the tree's nodes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from resispec.decoding.drafters import process_logits
from resispec.decoding.kv_cache import cache_length, keep_positions
from resispec.decoding.layout import TreeLayout, tree_layout
from resispec.decoding.tree_attention import model_dtype
from resispec.decoding.trees import Tree

# How closely output_embeddings(last hidden state) must reproduce the model's own logits for the lazy
# per-node projection to be used: float32 matmul rounding, not a different head (e.g. a logit soft-cap).
HEAD_TOLERANCE = {"atol": 1e-4, "rtol": 1e-3}
# Rows projected together by the lazy head: on a CPU the product is memory-bound (the [V, H] head is read
# once), so up to ~8 rows cost about one (measured here: bf16 1-8 rows ~11 ms, 16 rows ~16 ms)
PROJECTION_ROWS = 8


def sync(device: torch.device) -> None:
    """Wait for an accelerator's queued work (timings on a GPU); no-op on the CPU."""
    if device.type != "cpu" and hasattr(torch, "accelerator"):
        torch.accelerator.synchronize(device)


class NodeProbs:
    """Target probabilities [V] per tree node, computed on first use.

    With ``head`` (the model's output embedding, checked at prefill to reproduce its logits) only the
    nodes the verification walk visits, and the few it may visit next, pay for the vocabulary
    projection: a request for node n projects n and its first descendants in breadth-first order (at most
    ``PROJECTION_ROWS`` rows) in one matrix product, since the walk's next node is one of n's children.
    """

    def __init__(self, temperature: float, layout: TreeLayout, logits=None, hidden=None, head=None) -> None:
        self.temperature, self.layout = temperature, layout
        self.logits, self.hidden, self.head = logits, hidden, head  # [N, V] or [N, H] + head
        self._cache: dict[int, torch.Tensor] = {}
        self.seconds = 0.0  # time spent projecting (counted as target time, not verification)

    def __getitem__(self, node: int) -> torch.Tensor:
        if node not in self._cache:
            start = time.perf_counter()
            if self.head is None:
                self._cache[node] = process_logits(self.logits[node], self.temperature)  # [V]
            else:
                group = self._group(node)
                probs = process_logits(self.head(self.hidden[group]), self.temperature)  # [G, V]
                self._cache.update(zip(group, probs, strict=True))
            sync(self._cache[node].device)
            self.seconds += time.perf_counter() - start
        return self._cache[node]

    def _group(self, node: int) -> list[int]:
        """``node`` and its not yet projected descendants, breadth first, at most PROJECTION_ROWS."""
        children, group, frontier = self.layout.tree.children, [node], [node]
        while frontier and len(group) < PROJECTION_ROWS:
            frontier = [kid for parent in frontier for kid in children[parent] if kid not in self._cache]
            group += frontier[: PROJECTION_ROWS - len(group)]
        return group


@dataclass
class TargetModel:
    """Target model with its KV cache; invariant: the cache holds all committed tokens but the last."""

    model: torch.nn.Module
    cache: object
    layout: TreeLayout  # the tree's ancestor matrix [N, N] and depths [N] on the model's device
    dtype: torch.dtype
    want_features: bool
    temperature: float
    head: torch.nn.Module | None = None

    def prefill(self, prompt: torch.Tensor) -> torch.Tensor | None:
        """Cache the prompt minus its last token; returns features [P-1, H] when wanted.

        Also checks whether output_embeddings(last hidden state) reproduces the model's logits; if so
        later verification forwards project only the visited nodes.
        """
        if len(prompt) < 2:
            return None
        out = self.model(
            input_ids=prompt[None, :-1], cache=self.cache, use_cache=True, output_hidden_states=True
        )
        hidden = out.hidden_states[-1][0]  # [P-1, H]
        head = self.model.get_output_embeddings()
        if head is not None and torch.allclose(head(hidden[-1]), out.logits[0, -1], **HEAD_TOLERANCE):
            self.head = head
        return hidden if self.want_features else None

    def verify_forward(self, tokens: torch.Tensor) -> tuple[NodeProbs, torch.Tensor | None]:
        """One forward over the tree nodes tokens [N]; returns node probabilities and features [N, H]."""
        prefix_len = cache_length(self.cache)
        mask = self.layout.mask(None, self.dtype)(prefix_len)  # [1, 1, N, P + N]
        out = self.model(
            input_ids=tokens[None],
            attention_mask=mask,
            position_ids=(self.layout.depths + prefix_len)[None],
            cache=self.cache,
            use_cache=True,
            output_hidden_states=self.want_features or self.head is not None,
            logits_to_keep=1 if self.head is not None else 0,
        )
        hidden = out.hidden_states[-1][0] if out.hidden_states is not None else None  # [N, H]
        if self.head is not None:
            probs = NodeProbs(self.temperature, self.layout, hidden=hidden, head=self.head)
        else:
            probs = NodeProbs(self.temperature, self.layout, logits=out.logits[0])
        return probs, hidden if self.want_features else None

    def keep_path(self, path: list[int], prefix_len: int) -> None:
        """Cut the cache to the committed prefix + root + accepted nodes."""
        slots = [prefix_len + n for n in [0, *path]]
        device = self.layout.depths.device  # the cache's: one index tensor for all layers, no per-layer copy
        keep = torch.cat([torch.arange(prefix_len, device=device), torch.tensor(slots, device=device)])
        keep_positions(self.cache, keep)


def new_target(model, tree: Tree, device, want_features: bool, temperature: float) -> TargetModel:
    from transformers import DynamicCache

    return TargetModel(
        model,
        DynamicCache(config=model.config),
        tree_layout(tree, device),
        model_dtype(model),
        want_features,
        temperature,
    )
