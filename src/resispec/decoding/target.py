"""The target side of a verification step: its static KV cache and one forward over the drafted tree.

Invariant between steps: the target's cache holds every committed token but the last one (the root of
the next tree), so each step forwards exactly the tree's nodes, written at slots prefix..prefix+N-1 of
a :class:`~resispec.decoding.static_cache.StaticKV` under a fixed-width tree mask; after verification
the accepted nodes' slots are copied down behind the root (``keep_path``), in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from resispec.decoding.compiled import decided_once, maybe_compile, static_cache
from resispec.decoding.drafters import process_logits
from resispec.decoding.kv_cache import cached_forward
from resispec.decoding.layout import TreeLayout, tree_layout
from resispec.decoding.static_cache import StaticKV, causal_mask
from resispec.decoding.tree_attention import model_dtype
from resispec.decoding.trees import Tree

# How closely output_embeddings(last hidden state) must reproduce the model's own logits for the
# per-node projection to be used, relative to the largest logit: matmul rounding in the model's dtype
# (HEAD_ROUNDINGS rounding steps of it; float32: HEAD_RTOL), not a different head (a logit soft-cap moves
# the top logits by several percent).
HEAD_RTOL, HEAD_ATOL, HEAD_ROUNDINGS = 1e-3, 1e-4, 8


def head_tolerance(dtype: torch.dtype) -> float:
    """The head check's tolerance relative to the largest logit for a model in ``dtype``."""
    return max(HEAD_RTOL, HEAD_ROUNDINGS * torch.finfo(dtype).eps)


def head_reproduces(head_logits: torch.Tensor, logits: torch.Tensor, dtype: torch.dtype) -> bool:
    """Whether a head's logits [V] equal the model's own logits [V] up to ``head_tolerance(dtype)``."""
    head_logits, logits = head_logits.float(), logits.float()
    error = float((head_logits - logits).abs().max())
    return error <= head_tolerance(dtype) * float(logits.abs().max()) + HEAD_ATOL


def sync(device: torch.device) -> None:
    """Wait for an accelerator's queued work (timings on a GPU); no-op on the CPU."""
    if torch.device(device).type != "cpu" and hasattr(torch, "accelerator"):
        torch.accelerator.synchronize(device)


@dataclass
class TargetModel:
    """Target model with its static KV cache; invariant: the cache holds all committed tokens but the last.

    ``compile_mode``: "none" or a ``torch.compile`` mode for the tree forward (``decoding.compiled``).
    """

    model: torch.nn.Module
    cache: StaticKV
    layout: TreeLayout
    dtype: torch.dtype
    want_features: bool
    temperature: float
    compile_mode: str = "none"
    head: torch.nn.Module | None = None
    hidden: torch.Tensor | None = None  # [N, H] of the last tree forward
    logits: torch.Tensor | None = None  # [N, V] of the last tree forward, when there is no usable head
    positions: torch.Tensor = field(default=None)  # long [N] slots / positions of the tree's nodes

    def __post_init__(self) -> None:
        device = self.layout.depths.device
        self.runner, self._rows = None, None  # _rows [N, V]: logits projected by ``row``
        self.positions = torch.empty(self.layout.tree.num_nodes, dtype=torch.long, device=device)
        self._node_range = torch.arange(self.layout.tree.num_nodes, device=device)

    def prefill(self, prompt: torch.Tensor) -> torch.Tensor | None:
        """Cache the prompt minus its last token; returns features [P-1, H] when wanted.

        On the model's first prompt of two tokens or more, also decides (once per model and head module:
        ``decided_once``) whether output_embeddings(last hidden state) reproduces the model's logits; if
        so tree forwards skip the model's own vocabulary projection and ``probs`` projects only the rows
        the verification asks for.
        """
        self.cache.length, self.head = 0, None
        if len(prompt) < 2:
            head = self.model.get_output_embeddings()
            usable = decided_once(self.model, f"head {id(head)}")  # None: no prompt has decided it yet
            self.head = head if usable else None
            self._bind()
            return None
        count = len(prompt) - 1
        self.cache.write = torch.arange(count, device=prompt.device)
        mask = causal_mask(0, count, self.cache.capacity, self.dtype, prompt.device)
        forward = cached_forward(self.model, self.cache, output_hidden_states=True)
        out = forward(prompt[None, :-1], self.cache.write[None], mask)
        self.cache.length = count
        hidden = out.hidden_states[-1][0]  # [P-1, H]
        head = self.model.get_output_embeddings()
        usable = head is not None and decided_once(
            self.model,
            f"head {id(head)}",
            lambda: head_reproduces(head(hidden[-1]), out.logits[0, -1], self.dtype),
        )
        self.head = head if usable else None
        self._bind()
        return hidden if self.want_features else None

    def _bind(self) -> None:
        """The tree forward for this head (compiled per tree shape when ``compile_mode`` asks)."""
        call = model_call(self.model, self.cache, self.head is not None)
        key = ("tree", self.layout.tree.parents, self.head is not None, id(self.cache))
        self.runner = maybe_compile(self.model, key, call, self.compile_mode)

    def forward_tree(self, tokens: torch.Tensor) -> torch.Tensor:
        """One forward over the tree nodes tokens [N] at the cache's end; returns hidden states [N, H]."""
        prefix_len = self.cache.length
        torch.add(self._node_range, prefix_len, out=self.positions)  # slots, no host copy
        self.cache.write = self.positions
        mask = self.layout.fixed_mask(None, self.dtype, self.cache.capacity).at(prefix_len)
        position_ids = (self.layout.depths + prefix_len)[None]
        self.hidden, self.logits = self.runner(tokens[None], position_ids, mask)
        return self.hidden

    def probs(self, nodes: torch.Tensor | None = None) -> torch.Tensor:
        """Target probabilities of the last tree forward at ``nodes`` (long [B], device) [B, V], or at
        every node [N, V] (``nodes=None``)."""
        if self.head is None:
            logits = self.logits if nodes is None else self.logits.index_select(0, nodes)
        else:
            hidden = self.hidden if nodes is None else self.hidden.index_select(0, nodes)
            logits = self.head(hidden)
        return process_logits(logits, self.temperature)

    def row(self, node: torch.Tensor, level: int) -> torch.Tensor:
        """Target probabilities [1, V] of ``node`` (long [1], device), the node the level-by-level walk
        stands on at ``level``: at the levels of ``layout.projections`` the node's row and its next levels'
        rows are projected in one product (the walk's next node is among them) and kept for later levels."""
        if self.head is None:
            return process_logits(self.logits.index_select(0, node), self.temperature)
        table = self.layout.projections.get(level)
        if table is not None:
            nodes = table.index_select(0, node)[0]  # [W]
            logits = self.head(self.hidden.index_select(0, nodes))  # [W, V]
            if (
                self._rows is None
                or self._rows.shape[-1] != logits.shape[-1]
                or self._rows.dtype != logits.dtype
            ):
                self._rows = logits.new_empty(self.layout.tree.num_nodes, logits.shape[-1])
            self._rows.index_copy_(0, nodes, logits)
        return process_logits(self._rows.index_select(0, node), self.temperature)

    def keep_path(self, path: torch.Tensor, accepted: int) -> None:
        """Cut the cache to the committed prefix + root + the ``accepted`` first nodes of ``path`` (long
        [D-1] device tensor of node ids, padded with -1): their slots are copied behind the root."""
        prefix_len = self.cache.length
        if accepted:
            self.cache.compact(path[:accepted] + prefix_len, prefix_len + 1)
        self.cache.length = prefix_len + 1 + accepted


def model_call(model, cache, head_usable: bool):
    """The eager tree forward: (input_ids [1, Q], position_ids [1, Q], mask) -> (hidden [Q, H], logits
    [Q, V] or None). With a usable head only the decoder runs (no vocabulary projection: the head projects
    the rows the walk asks for)."""

    decoder = model.get_decoder() if head_usable and hasattr(model, "get_decoder") else None
    if decoder is not None:  # the decoder's last hidden state is the one the head check passed on
        decoder_forward = cached_forward(decoder, cache)

        def decode(input_ids, position_ids, mask):
            return decoder_forward(input_ids, position_ids, mask).last_hidden_state[0], None

        return decode

    forward = cached_forward(model, cache, output_hidden_states=True, logits_to_keep=1 if head_usable else 0)

    def call(input_ids, position_ids, mask):
        out = forward(input_ids, position_ids, mask)
        return out.hidden_states[-1][0], None if head_usable else out.logits[0]

    return call


def new_target(
    model,
    tree: Tree,
    device,
    want_features: bool,
    temperature: float,
    *,
    capacity: int,
    compile_mode: str = "none",
) -> TargetModel:
    """A target over the model's static cache of at least ``capacity`` positions (prompt + new tokens +
    tree nodes), reused across generations."""
    cache = static_cache(model, "target", capacity)
    return TargetModel(
        model, cache, tree_layout(tree, device), model_dtype(model), want_features, temperature, compile_mode
    )
