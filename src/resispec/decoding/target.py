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
from resispec.decoding.tree_attention import model_dtype, tree_mask
from resispec.decoding.trees import Tree

# How closely output_embeddings(last hidden state) must reproduce the model's own logits for the lazy
# per-node projection to be used: float32 matmul rounding, not a different head (e.g. a logit soft-cap).
HEAD_TOLERANCE = {"atol": 1e-4, "rtol": 1e-3}


def sync(device: torch.device) -> None:
    """Wait for an accelerator's queued work (timings on a GPU); no-op on the CPU."""
    if device.type != "cpu" and hasattr(torch, "accelerator"):
        torch.accelerator.synchronize(device)


class NodeProbs:
    """Target probabilities [V] per tree node, computed on first use.

    With ``head`` (the model's output embedding, checked at prefill to reproduce its logits) only the
    nodes the verification walk visits pay for the vocabulary projection and softmax.
    """

    def __init__(self, temperature: float, logits=None, hidden=None, head=None) -> None:
        self.temperature, self.logits, self.hidden, self.head = temperature, logits, hidden, head
        self._cache: dict[int, torch.Tensor] = {}
        self.seconds = 0.0  # time spent projecting (counted as target time, not verification)

    def __getitem__(self, node: int) -> torch.Tensor:
        if node not in self._cache:
            start = time.perf_counter()
            logits = self.logits[node] if self.head is None else self.head(self.hidden[node])  # [V]
            self._cache[node] = process_logits(logits, self.temperature)
            sync(self._cache[node].device)
            self.seconds += time.perf_counter() - start
        return self._cache[node]


@dataclass
class TargetModel:
    """Target model with its KV cache; invariant: the cache holds all committed tokens but the last."""

    model: torch.nn.Module
    cache: object
    ancestors: torch.Tensor  # [N, N] bool
    depths: torch.Tensor  # [N]
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
        nodes = torch.arange(len(tokens), device=tokens.device)
        mask = tree_mask(self.ancestors, nodes, nodes[:0], prefix_len, self.dtype)  # [1, 1, N, P + N]
        out = self.model(
            input_ids=tokens[None],
            attention_mask=mask,
            position_ids=(self.depths + prefix_len)[None],
            cache=self.cache,
            use_cache=True,
            output_hidden_states=self.want_features or self.head is not None,
            logits_to_keep=1 if self.head is not None else 0,
        )
        hidden = out.hidden_states[-1][0] if out.hidden_states is not None else None  # [N, H]
        if self.head is not None:
            probs = NodeProbs(self.temperature, hidden=hidden, head=self.head)
        else:
            probs = NodeProbs(self.temperature, logits=out.logits[0])
        return probs, hidden if self.want_features else None

    def keep_path(self, path: list[int], prefix_len: int) -> None:
        """Cut the cache to the committed prefix + root + accepted nodes."""
        slots = [prefix_len + n for n in [0, *path]]
        device = self.depths.device  # the cache's: one index tensor for all layers, no per-layer copy
        keep = torch.cat([torch.arange(prefix_len, device=device), torch.tensor(slots, device=device)])
        keep_positions(self.cache, keep)


def new_target(model, tree: Tree, device, want_features: bool, temperature: float) -> TargetModel:
    from transformers import DynamicCache

    return TargetModel(
        model,
        DynamicCache(config=model.config),
        tree.ancestor_matrix(device),
        torch.tensor(tree.depths, device=device),
        model_dtype(model),
        want_features,
        temperature,
    )
