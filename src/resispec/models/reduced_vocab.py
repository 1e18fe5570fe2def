"""Drafts with a reduced vocabulary: an LM head over the V' most frequent tokens, q = 0 elsewhere.

A draft that never proposes a token outside its vocabulary keeps every verifier exact: the verifiers'
output laws hold for any draft distribution q, including one with zeros (docs/verifiers.md). The head
(`ReducedVocabHead`) computes V' logits and returns full-vocabulary logits [..., V] with -inf outside its
vocabulary, so the engine, HF assisted generation, the acceptance metric and the pair profile use such a
draft unchanged; its per-token compute (`resispec.models.compute`) counts V' rows. The input embedding
stays full: any token of a context can be read.

Directory layout: a Llama `config.json` with the full `vocab_size`, `tie_word_embeddings: false` and
`draft_vocab_size: V'`, and one `model.safetensors` holding the decoder weights plus `lm_head.weight`
[V', H] and `lm_head.token_ids` [V'] (sorted token ids). `load_reduced` rebuilds it.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

CONFIG_KEY = "draft_vocab_size"
WEIGHTS = "model.safetensors"


class ReducedVocabHead(nn.Module):
    """LM head over `token_ids` (long [V'], sorted): `forward` gives [..., V] logits, -inf elsewhere."""

    def __init__(self, weight: torch.Tensor, token_ids: torch.Tensor, vocab_size: int) -> None:
        super().__init__()
        if weight.shape[0] != token_ids.numel():
            raise ValueError(f"weight has {weight.shape[0]} rows for {token_ids.numel()} token_ids")
        if token_ids.numel() and (int(token_ids.min()) < 0 or int(token_ids.max()) >= vocab_size):
            raise ValueError(f"token_ids must lie in [0, {vocab_size}), got {int(token_ids.max())}")
        self.weight = nn.Parameter(weight.detach().clone())  # [V', H]
        self.register_buffer("token_ids", token_ids.detach().clone().long())  # [V']
        self.vocab_size = vocab_size

    def reduced(self, hidden: torch.Tensor) -> torch.Tensor:
        """Logits over the reduced vocabulary [..., V'] (training uses these)."""
        return nn.functional.linear(hidden, self.weight.to(hidden.dtype))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        small = self.reduced(hidden)  # [..., V']
        full = small.new_full((*small.shape[:-1], self.vocab_size), float("-inf"))  # [..., V]
        return full.index_copy_(-1, self.token_ids, small)

    def positions(self) -> torch.Tensor:
        """Column of each token id in the reduced logits: long [V], -1 outside the vocabulary."""
        columns = torch.full((self.vocab_size,), -1, dtype=torch.long, device=self.token_ids.device)
        columns[self.token_ids] = torch.arange(self.token_ids.numel(), device=self.token_ids.device)
        return columns


def frequent_tokens(chunks: torch.Tensor, size: int, vocab_size: int, always=()) -> torch.Tensor:
    """The `size` most frequent token ids of `chunks` (ties by id), plus `always` (e.g. end-of-text),
    sorted. ValueError when `size` is not in [1, vocab_size]."""
    if not 1 <= size <= vocab_size:
        raise ValueError(f"draft vocabulary size {size!r} must be in [1, {vocab_size}]")
    counts = torch.bincount(chunks.flatten(), minlength=vocab_size).double()  # [V]
    for token in always:
        counts[int(token)] = float("inf")
    order = torch.sort(-counts, stable=True).indices  # most frequent first, ties by token id
    return order[:size].sort().values


def draft_vocabulary(target_config, chunks: torch.Tensor, size: int) -> torch.Tensor:
    """The `size` most frequent tokens of the training chunks, end-of-text always among them."""
    eos = target_config.eos_token_id
    always = [t for t in (eos if isinstance(eos, list | tuple) else [eos]) if t is not None]
    return frequent_tokens(chunks, size, target_config.vocab_size, always)


def attach(model, token_ids: torch.Tensor, rows: torch.Tensor | None = None) -> ReducedVocabHead:
    """Replace `model`'s LM head by a reduced head over `token_ids` with weight `rows` [V', H] (default:
    the current LM head's rows of those tokens), untied; records `draft_vocab_size` in the config."""
    current = model.get_output_embeddings().weight  # [V, H]
    rows = current.detach()[token_ids.to(current.device)] if rows is None else rows
    head = ReducedVocabHead(rows.float(), token_ids, model.config.vocab_size)
    model.lm_head = head.to(current.device)
    model.config.tie_word_embeddings = False
    setattr(model.config, CONFIG_KEY, int(token_ids.numel()))
    return model.lm_head


def is_reduced(model_dir: str | Path) -> bool:
    import json

    path = Path(model_dir) / "config.json"
    return path.is_file() and bool(json.loads(path.read_text()).get(CONFIG_KEY))


def load_reduced(model_dir: str | Path, dtype: torch.dtype):
    """A reduced-vocabulary draft saved by `save_pretrained` (layout in the module docstring)."""
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModelForCausalLM

    model_dir = Path(model_dir)
    if not (model_dir / WEIGHTS).is_file():
        raise ValueError(f"reduced-vocabulary draft {model_dir}: missing {WEIGHTS}")
    config = AutoConfig.from_pretrained(model_dir)
    state = load_file(model_dir / WEIGHTS)
    size = getattr(config, CONFIG_KEY)
    if state["lm_head.token_ids"].numel() != size:
        raise ValueError(
            f"reduced-vocabulary draft {model_dir}: {CONFIG_KEY}={size} but lm_head.token_ids has "
            f"{state['lm_head.token_ids'].numel()} entries"
        )
    model = AutoModelForCausalLM.from_config(config)
    attach(model, state["lm_head.token_ids"], torch.zeros(size, config.hidden_size))
    model.load_state_dict(state, strict=True)
    return model.to(dtype)
