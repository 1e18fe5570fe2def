"""Data and loss shared by draft and EAGLE-head training: token chunks and held-out documents, the
teacher pass (the target's top-k distributions at each training temperature), the distillation loss.

Terms: the *teacher* is the target model; its *top-k targets* at temperature T are, per position, the
probabilities p_T of its k most likely tokens (the same tokens at every T) and the *tail*, the mass
1 - sum of them. A draft with a reduced vocabulary (`resispec.models.reduced_vocab`) has q = 0 outside
it; its loss compares p_T restricted to the vocabulary and renormalised (the optimum of every loss here
for such a draft) with q_T.
"""

from __future__ import annotations

import copy
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch

from resispec.models.acceptance import tempered
from resispec.models.teacher_parts import TEACHER_BATCH
from resispec.models.training import Progress

log = logging.getLogger(__name__)

HELDOUT_EVERY = 20  # every 20th document is held out for acceptance (never trained on)
MAX_HELDOUT = 32  # held-out documents at most (each truncated to seq_len tokens)
MIN_TAIL_PROB = 1e-6  # floor of the draft's tail bucket before its log (a saturated top-k)


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


def split_heldout(documents: Sequence[Sequence[int]]) -> tuple[list, list]:
    """(training documents, held-out documents): every HELDOUT_EVERY-th document (at most MAX_HELDOUT,
    each of >= 2 tokens) is held out, so the held-out set samples every corpus of the list."""
    held = [i for i in range(0, len(documents), HELDOUT_EVERY) if len(documents[i]) >= 2][:MAX_HELDOUT]
    if not held or len(held) == len(documents):
        raise ValueError(f"{len(documents)} documents: too few to hold out some and train on the rest")
    chosen = set(held)
    return [d for i, d in enumerate(documents) if i not in chosen], [documents[i] for i in held]


class TrainingData(NamedTuple):
    """Training chunks [N, S], held-out token sequences, and the tokenizer used (None for token ids)."""

    chunks: torch.Tensor
    heldout: list
    tokenizer: object


def training_chunks(target, target_dir, *, texts, token_ids, heldout, seq_len: int, caller: str):
    """Training chunks [N, S] and held-out sequences (<= seq_len tokens) for a model trained on `target`.

    `texts` are tokenized with the target's tokenizer (returned, else None); otherwise `token_ids` are
    used. Without `heldout`, `split_heldout` holds out whole documents.
    """
    tokenizer = None
    if texts is not None:
        from resispec.models.loading import load_tokenizer

        tokenizer = load_tokenizer(target_dir)
        token_ids = tokenize_texts(texts, tokenizer)
    if token_ids is None:
        raise ValueError(f"{caller} needs texts or token_ids")
    if heldout is None:
        token_ids, heldout = split_heldout(token_ids)
        heldout = [list(h)[:seq_len] for h in heldout]
    eos = target.config.eos_token_id
    chunks = chunk_tokens(token_ids, seq_len, eos_id=eos[0] if isinstance(eos, list | tuple) else eos)
    return TrainingData(chunks, list(heldout), tokenizer)


def load_teacher(target_dir, opts, *, texts, token_ids, heldout, caller: str):
    """The target of a training run, loaded in float32 on ``opts.device`` (a ``TrainOptions``), and its
    ``TrainingData`` (``training_chunks`` of ``opts.seq_len`` tokens): (target, data)."""
    from resispec.models.loading import load_model

    target = load_model(target_dir, device=opts.device, dtype="float32")
    data = training_chunks(
        target,
        target_dir,
        texts=texts,
        token_ids=token_ids,
        heldout=heldout,
        seq_len=opts.seq_len,
        caller=caller,
    )
    return target, data


def teacher_seed(seed: int) -> int:
    """The seed of the teacher's chunk order: derived from the training seed alone (not from a model's own
    generator), so that every model trained on a target with the same seed and chunks labels a prefix of
    the same order, and one teacher pass serves them all (`resispec.models.teacher`)."""
    digest = hashlib.sha256(f"{seed}|teacher-chunks".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def teacher_chunks(chunks: torch.Tensor, teacher_tokens: int, seed: int) -> torch.Tensor:
    """The chunks the teacher labels: the first `teacher_tokens // S` rows of [N, S] (at least one, at
    most N) in an order seeded by `teacher_seed(seed)`, so every corpus is sampled whatever the budget,
    and a smaller budget labels a prefix of a larger one's chunks."""
    rows = max(1, min(chunks.shape[0], teacher_tokens // chunks.shape[1]))
    if rows < chunks.shape[0]:
        log.info("teacher budget: %d of %d chunks (%d tokens)", rows, chunks.shape[0], rows * chunks.shape[1])
    order = torch.randperm(chunks.shape[0], generator=torch.Generator().manual_seed(teacher_seed(seed)))
    return chunks[order[:rows]]


@dataclass
class TeacherTargets:
    """Target outputs on token chunks: top-k next-token probabilities per temperature, optionally features."""

    tokens: torch.Tensor  # [N, S] long
    indices: torch.Tensor  # [N, S, k] int32, the same top-k tokens at every temperature
    probs: dict[float, torch.Tensor]  # {T: [N, S, k] float16}
    features: torch.Tensor | None = None  # [N, S, H] bfloat16, last hidden state (after the final norm)

    def rows(self, first: int, last: int) -> TeacherTargets:
        """The targets of chunks ``first:last``."""
        return TeacherTargets(
            tokens=self.tokens[first:last],
            indices=self.indices[first:last],
            probs={t: p[first:last] for t, p in self.probs.items()},
            features=None if self.features is None else self.features[first:last],
        )

    @classmethod
    def concatenate(cls, parts: Sequence[TeacherTargets]) -> TeacherTargets:
        """The parts' chunks one after the other (features only if every part has them)."""
        with_features = all(part.features is not None for part in parts)
        return cls(
            tokens=torch.cat([part.tokens for part in parts]),
            indices=torch.cat([part.indices for part in parts]),
            probs={t: torch.cat([part.probs[t] for part in parts]) for t in parts[0].probs},
            features=torch.cat([part.features for part in parts]) if with_features else None,
        )


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
    temperatures: Sequence[float] = (1.0,),
    amp: bool,
    batch_size: int = TEACHER_BATCH,
    with_features: bool = False,
) -> TeacherTargets:
    """Run the target over every row of `chunks` [N, S], `batch_size` rows at a time; keep its top-k
    probabilities at each temperature (and its last hidden states ``with_features``)."""
    if chunks.shape[0] == 0:
        raise ValueError("teacher_topk: no chunks to label")
    teacher = _teacher_copy(target, amp)
    probs, indices, feats = {t: [] for t in temperatures}, [], []
    progress = Progress("teacher", chunks.numel(), "tokens", every=20)
    for first in range(0, chunks.shape[0], batch_size):
        ids = chunks[first : first + batch_size]  # [b, S]
        out = teacher(input_ids=ids.to(target.device), output_hidden_states=with_features)
        logits = out.logits.float()  # [b, S, V]
        top = logits.topk(top_k, dim=-1)
        indices.append(top.indices.to(torch.int32).cpu())
        for temperature in temperatures:
            lse = tempered(logits, temperature).logsumexp(-1, keepdim=True)  # [b, S, 1]
            log_probs = tempered(top.values, temperature) - lse
            probs[temperature].append(log_probs.exp().to(torch.float16).cpu())  # [b, S, k]
        if with_features:
            feats.append(out.hidden_states[-1].to(torch.bfloat16).cpu())  # [b, S, H]
        progress.update(min(first + batch_size, chunks.shape[0]) * chunks.shape[1])
    del teacher
    return TeacherTargets(
        tokens=chunks,
        indices=torch.cat(indices),
        probs={t: torch.cat(p) for t, p in probs.items()},
        features=torch.cat(feats) if with_features else None,
    )


def distill_loss(
    logits: torch.Tensor,
    top_probs: torch.Tensor,
    top_indices: torch.Tensor,
    *,
    temperature: float = 1.0,
    kind: str = "kl",
    positions: torch.Tensor | None = None,
) -> torch.Tensor:
    """Distance from the target's top-k targets (+ tail bucket) at `temperature` to the draft's q_T.

    logits: [B, S, V'] draft logits; top_probs [B, S, k] the target's p_T; top_indices [B, S, k] token
    ids. `positions` [V] long maps token ids to columns of `logits` (-1 outside a reduced vocabulary;
    None: the identity). `kind`: "kl" = KL(p || q), "tv" = sum |p - q| / 2 = 1 - sum min(p, q), "kl+tv".
    """
    target_top = top_probs.float()  # [B, S, k]
    columns = top_indices.long() if positions is None else positions[top_indices.long()]  # [B, S, k]
    inside = columns >= 0
    target_top = target_top * inside
    target_tail = (1.0 - top_probs.float().sum(-1)).clamp_min(0.0)  # [B, S]
    total = (target_top.sum(-1) + target_tail).clamp_min(1e-12)  # renormalise onto the vocabulary
    target_top, target_tail = target_top / total[..., None], target_tail / total
    log_q = tempered(logits.float(), temperature).log_softmax(-1)  # [B, S, V']
    draft_log = log_q.gather(-1, columns.clamp_min(0))  # [B, S, k]
    draft_top = draft_log.exp() * inside
    draft_tail = (1.0 - draft_top.sum(-1)).clamp_min(MIN_TAIL_PROB)  # [B, S]
    loss = logits.new_zeros((), dtype=torch.float32)
    if kind in ("kl", "kl+tv"):
        kl_top = (target_top * (target_top.clamp_min(1e-12).log() - draft_log.where(inside, 0.0))).sum(-1)
        kl_tail = target_tail * (target_tail.clamp_min(1e-12).log() - draft_tail.log())
        loss = loss + (kl_top + kl_tail).mean()
    if kind in ("tv", "kl+tv"):
        overlap = torch.minimum(target_top, draft_top).sum(-1) + torch.minimum(target_tail, draft_tail)
        loss = loss + (1.0 - overlap).mean()
    return loss


def tempered_loss(logits, targets: TeacherTargets, index, *, kind: str, positions=None) -> torch.Tensor:
    """`distill_loss` averaged over the temperatures of `targets`, on the rows `index` (logits [B, S, V'])."""
    device = logits.device
    top_indices = targets.indices[index].to(device)
    losses = [
        distill_loss(logits, p[index].to(device), top_indices, temperature=t, kind=kind, positions=positions)
        for t, p in targets.probs.items()
    ]
    return sum(losses) / len(losses)
