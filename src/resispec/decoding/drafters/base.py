"""The drafter interface: ``propose`` a token tree, ``update`` after verification.

A drafter keeps its own state (e.g. a KV cache) for the committed sequence. The engine calls, per
sequence, ``reset()``, then once ``update(prompt_ids, (), features)`` and, every step,
``propose(...)`` followed by ``update(...)`` with the accepted tree nodes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from resispec.decoding.trees import Tree

__all__ = [
    "Drafter",
    "DraftTree",
    "AcceptedNodes",
    "process_logits",
    "draw_children",
    "draw_with_replacement",
    "DRAWS",
]

DRAWS = ("with_replacement", "without_replacement", "deterministic", "greedy")


@dataclass
class DraftTree:
    """A drafted tree: ``tokens`` long [N] (``tokens[0]`` is the root, the last committed token);
    ``draft_probs`` float [F, V], the draft distribution each node above the last level had its children
    drawn from (nodes ``0..F-1`` in breadth-first order; last-level nodes have no row); ``valid`` bool
    [N] (False for nodes that could not be drawn, e.g. more children than tokens with non-zero draft
    mass without replacement, and their descendants)."""

    tree: Tree
    tokens: torch.Tensor
    draft_probs: torch.Tensor
    valid: torch.Tensor


class AcceptedNodes(list):
    """The accepted tree nodes of a step (a list of ints, root excluded, in path order) that also carries
    them on the device: ``padded`` long [D-1] (node ids, -1 after the path), so that a drafter can cut
    its cache without copying host data to the device."""

    def __init__(self, nodes, padded: torch.Tensor | None = None) -> None:
        super().__init__(nodes)
        self.padded = padded


class Drafter(ABC):
    """Two-method drafter interface (plus ``reset`` for a new sequence and ``configure`` for the engine's
    options)."""

    #: True when ``update`` needs the target's last hidden states (EAGLE-style heads).
    needs_target_features: bool = False

    def configure(self, *, capacity: int, compile_mode: str = "none") -> None:  # noqa: B027 - optional hook
        """Engine options for the next sequences: cache ``capacity`` (positions a generation may reach,
        tree included) and the ``torch.compile`` mode of the per-level forwards."""

    def reset(self) -> None:  # noqa: B027 - optional hook
        """Forget any state from a previous sequence."""

    def warm_up(self, tree: Tree, prompt: torch.Tensor) -> None:  # noqa: B027 - optional hook
        """Run every fixed-shape forward a generation of ``tree`` may compile (the engine's ``warm_up``,
        after ``configure``; the state is reset afterwards); ``prompt`` long [L], a prompt of the run."""

    @abstractmethod
    def propose(
        self,
        committed_ids: torch.Tensor,
        tree: Tree,
        *,
        draws: str,
        temperature: float,
        generator: torch.Generator,
    ) -> DraftTree:
        """Draft ``tree`` after ``committed_ids`` (long [L]; its last token is the root)."""

    @abstractmethod
    def update(
        self,
        committed_ids: torch.Tensor,
        accepted_nodes: Sequence[int],
        target_features: torch.Tensor | None = None,
    ) -> None:
        """Commit: ``committed_ids`` (long [L']) is the new committed sequence, ``accepted_nodes`` the
        accepted tree nodes of the last proposal (root excluded; empty before the first step) and
        ``target_features`` [n, H] the target's last hidden states at the positions verified since the
        previous call (root and accepted nodes; the prompt minus its last token at the start)."""


def process_logits(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Float32 probabilities [..., V]: softmax(logits / T), or softmax(logits) for ranking when T = 0."""
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    scaled = logits.float() / temperature if temperature > 0 else logits.float()
    return torch.softmax(scaled, dim=-1)


def draw_children(
    draft_probs: torch.Tensor, k: int, draws: str, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw k children for each of P parents: returns tokens long [P, k] and valid bool [P, k].

    ``with_replacement``: i.i.d. from draft_probs (``draw_with_replacement``: on the device, no host read);
    ``without_replacement``: Gumbel top-k (equivalently
    top-k of q / Exp(1)); ``deterministic`` / ``greedy``: top-k of draft_probs.
    """
    num_parents, vocab = draft_probs.shape  # [P, V]
    if draws == "with_replacement":
        tokens = draw_with_replacement(draft_probs, k, generator)
        return tokens, torch.ones_like(tokens, dtype=torch.bool)
    if draws == "without_replacement":
        noise = torch.empty_like(draft_probs).exponential_(generator=generator)  # [P, V]
        keys = draft_probs / noise
        values, tokens = keys.topk(min(k, vocab), dim=-1)
        valid = values > 0
        return _pad(tokens, valid, k)
    if draws in ("deterministic", "greedy"):
        tokens = draft_probs.topk(min(k, vocab), dim=-1).indices
        return _pad(tokens, torch.ones_like(tokens, dtype=torch.bool), k)
    raise ValueError(f"draws must be one of {DRAWS}, got {draws!r}")


def draw_with_replacement(probs: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
    """k i.i.d. tokens per row of probs [P, V] (unnormalised masses allowed): long [P, k].

    The law of ``torch.multinomial(probs, k, replacement=True)`` by inverse CDF in float64: each draw is
    the first index whose CDF exceeds u * total (u uniform on [0, 1)), so zero-mass tokens are never drawn.
    Unlike ``torch.multinomial`` (whose input checks read the device on the host) it reads nothing on the
    host; a row without mass, which the engine's softmax rows never are, yields index V - 1.
    """
    cdf = probs.double().cumsum(-1)  # [P, V]
    uniform = torch.rand(probs.shape[0], k, generator=generator, device=probs.device, dtype=torch.float64)
    tokens = torch.searchsorted(cdf, uniform * cdf[:, -1:], right=True)  # [P, k]
    return tokens.clamp_max(probs.shape[-1] - 1)


def _pad(tokens: torch.Tensor, valid: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    missing = k - tokens.shape[1]
    if missing <= 0:
        return tokens, valid
    tokens = torch.cat([tokens, tokens.new_zeros(tokens.shape[0], missing)], dim=1)
    valid = torch.cat([valid, valid.new_zeros(valid.shape[0], missing)], dim=1)
    return tokens, valid
