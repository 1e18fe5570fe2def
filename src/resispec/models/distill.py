"""Helpers shared by draft and EAGLE-head training: token chunks, teacher top-k targets, the loss."""

from __future__ import annotations

import copy
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch

log = logging.getLogger(__name__)


def tokenize_texts(texts: Sequence[str], tokenizer) -> list[list[int]]:
    """Token ids of each text (with the tokenizer's usual special tokens)."""
    return [list(tokenizer(text)["input_ids"]) for text in texts]


def chunk_tokens(token_ids: Sequence[Sequence[int]], seq_len: int, *, eos_id: int | None) -> torch.Tensor:
    """Concatenate documents (each followed by `eos_id` when given) and cut into rows [N, seq_len]."""
    stream: list[int] = []
    for ids in token_ids:
        stream.extend(int(t) for t in ids)
        if eos_id is not None:
            stream.append(int(eos_id))
    n_rows = len(stream) // seq_len
    if n_rows < 2:
        raise ValueError(f"corpus has {len(stream)} tokens: fewer than two chunks of seq_len={seq_len}")
    return torch.tensor(stream[: n_rows * seq_len], dtype=torch.long).view(n_rows, seq_len)


@dataclass(frozen=True)
class TrainOptions:
    """Budget and optimiser settings shared by draft distillation and EAGLE-head training."""

    steps: int = 100_000
    minutes_budget: float = 15.0
    seed: int = 0
    device: str = "cpu"
    seq_len: int = 128
    batch_size: int = 8
    lr: float = 3e-3
    top_k: int = 64
    teacher_fraction: float = 0.25
    amp: bool | None = None

    @property
    def seconds(self) -> float:
        return 60.0 * self.minutes_budget

    @property
    def use_amp(self) -> bool:
        """bfloat16 autocast: on by default on CPU and CUDA."""
        if self.amp is not None:
            return self.amp
        return self.device == "cpu" or self.device.startswith("cuda")


@dataclass
class TeacherTargets:
    """Target outputs on token chunks: top-k next-token probabilities (T = 1) and, optionally, features."""

    tokens: torch.Tensor  # [N, S] long
    probs: torch.Tensor  # [N, S, k] float16
    indices: torch.Tensor  # [N, S, k] int32
    features: torch.Tensor | None = None  # [N, S, H] bfloat16, last hidden state (after the final norm)


class TrainingData(NamedTuple):
    """Training chunks [N, S], held-out sequences, and the tokenizer used (None for token ids)."""

    chunks: torch.Tensor
    heldout: list
    tokenizer: object


def training_chunks(target, target_dir, *, texts, token_ids, heldout, seq_len: int, caller: str):
    """Training chunks [N, S] and held-out sequences for a model trained on `target`.

    `texts` are tokenized with the target's tokenizer (returned, else None); otherwise `token_ids` are
    used. The held-out set defaults to the last 5% of chunks, at most 32.
    """
    tokenizer = None
    if texts is not None:
        from resispec.models.loading import load_tokenizer

        tokenizer = load_tokenizer(target_dir)
        token_ids = tokenize_texts(texts, tokenizer)
    if token_ids is None:
        raise ValueError(f"{caller} needs texts or token_ids")
    eos = target.config.eos_token_id
    chunks = chunk_tokens(
        token_ids, seq_len, eos_id=eos[0] if isinstance(eos, list | tuple) else eos
    )  # [N, S]
    if heldout is None:
        n_held = max(1, min(32, len(chunks) // 20))
        chunks, heldout = chunks[:-n_held], list(chunks[-n_held:])
    return TrainingData(chunks, heldout, tokenizer)


def _teacher_copy(target, amp: bool):
    if not amp:
        return target
    return copy.deepcopy(target).to(torch.bfloat16)


@torch.no_grad()
def teacher_topk(
    target,
    chunks: torch.Tensor,
    *,
    top_k: int,
    seconds: float,
    amp: bool,
    batch_size: int = 8,
    with_features: bool = False,
) -> TeacherTargets:
    """Run the target over `chunks` [N, S] until done or `seconds` pass; keep its top-k probabilities."""
    teacher = _teacher_copy(target, amp)
    probs, indices, feats, start, done = [], [], [], time.monotonic(), 0
    for first in range(0, chunks.shape[0], batch_size):
        ids = chunks[first : first + batch_size]  # [b, S]
        out = teacher(input_ids=ids.to(target.device), output_hidden_states=with_features)
        logits = out.logits.float()  # [b, S, V]
        top = logits.topk(top_k, dim=-1)
        top_log_probs = top.values - logits.logsumexp(dim=-1, keepdim=True)  # [b, S, k]
        probs.append(top_log_probs.exp().to(torch.float16).cpu())
        indices.append(top.indices.to(torch.int32).cpu())
        if with_features:
            feats.append(out.hidden_states[-1].to(torch.bfloat16).cpu())  # [b, S, H]
        done += ids.shape[0]
        elapsed = time.monotonic() - start
        if done == ids.shape[0] or (first // batch_size) % 20 == 0:
            rate = done * chunks.shape[1] / elapsed
            eta = min((chunks.shape[0] - done) * chunks.shape[1] / rate, seconds - elapsed)
            log.info("teacher %d/%d chunks, %.0f tok/s, ETA %.0f s", done, chunks.shape[0], rate, max(eta, 0))
        if elapsed >= seconds:
            log.info("teacher time budget reached after %d of %d chunks", done, chunks.shape[0])
            break
    del teacher
    return TeacherTargets(
        tokens=chunks[:done],
        probs=torch.cat(probs),
        indices=torch.cat(indices),
        features=torch.cat(feats) if with_features else None,
    )


def distill_loss(logits: torch.Tensor, top_probs: torch.Tensor, top_indices: torch.Tensor) -> torch.Tensor:
    """KL(target || draft) on the target's top-k tokens plus one bucket for the remaining mass.

    logits: [B, S, V] draft logits; top_probs: [B, S, k] target probabilities; top_indices: [B, S, k].
    """
    target_top = top_probs.float()  # [B, S, k]
    logits = logits.float()
    draft_log = logits.gather(-1, top_indices.long()) - logits.logsumexp(-1, keepdim=True)  # [B, S, k]
    target_tail = (1.0 - target_top.sum(-1)).clamp_min(0.0)  # [B, S]
    draft_tail = (1.0 - draft_log.exp().sum(-1)).clamp_min(1e-6)  # [B, S]
    safe_top = target_top.clamp_min(1e-12)
    kl_top = (target_top * (safe_top.log() - draft_log)).sum(-1)  # [B, S]
    kl_tail = target_tail * (target_tail.clamp_min(1e-12).log() - draft_tail.log())  # [B, S]
    return (kl_top + kl_tail).mean()


def lr_factor(step: int, progress: float, warmup: int = 50) -> float:
    """Linear warm-up over `warmup` steps, then cosine decay to 10% as `progress` goes 0 -> 1."""
    ramp = min(1.0, step / warmup)
    return ramp * (0.1 + 0.45 * (1.0 + math.cos(math.pi * min(progress, 1.0))))
