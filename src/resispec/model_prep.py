"""Preparing one model of the config: materialise a source, distil a draft or train an EAGLE head,
then measure what the report needs (single-candidate acceptance, Sequoia's acceptance vector)."""

from __future__ import annotations

import logging
from pathlib import Path

import torch

log = logging.getLogger(__name__)


def training_texts(data: dict) -> list[str]:
    """Training text: every local/hub document after the first `num_prompts` of each corpus, so the
    evaluation prompts are never trained on."""
    from resispec.data import load_corpus

    held_out = data.get("num_prompts", 200)
    texts = []
    for name in data.get("datasets", []):
        rows = load_corpus(name, held_out + data.get("train_documents", 2000), data_dir=data.get("dir"))
        texts += [row["text"] for row in rows[held_out:]]
    if not texts:
        raise ValueError("no training documents left after the evaluation prompts; add corpus documents")
    return texts


def materialise_source(source: str, dest: Path) -> dict:
    from resispec import models, tiny

    if source.startswith("tiny:"):
        tiny.build(source.removeprefix("tiny:"), dest)
    else:
        models.materialize(source, dest)
    return {"kind": "source", "source": source}


def heldout_contexts(target_dir: Path, texts: list[str], *, count: int = 32, length: int = 64) -> list:
    from resispec.models import load_tokenizer

    tokenizer = load_tokenizer(target_dir)
    contexts = []
    for text in reversed(texts):
        ids = tokenizer(text)["input_ids"][:length]
        if len(ids) >= 8:
            contexts.append(torch.tensor(ids))
        if len(contexts) == count:
            break
    return contexts


@torch.no_grad()
def position_acceptance(target, draft, contexts, *, k: int = 8, temperature: float = 1.0, seed: int = 0):
    """Sequoia's acceptance vector: P(the i-th candidate is accepted | the first i-1 were rejected), by
    running the `sequoia` sampler (candidates without replacement) at every position of `contexts`."""
    from resispec.drafters.base import draw_children, process_logits
    from resispec.verify import get_verifier

    verifier = get_verifier("sequoia")
    generator = torch.Generator().manual_seed(seed)
    tried, accepted = torch.zeros(k), torch.zeros(k)
    for ids in contexts:
        ids = ids.to(next(target.parameters()).device)
        target_probs = process_logits(target(ids[None]).logits[0], temperature)  # [S, V]
        draft_probs = process_logits(draft(ids[None]).logits[0], temperature)  # [S, V]
        candidates, valid = draw_children(draft_probs, k, verifier.draws, generator)  # [S, k], [S, k]
        for position in range(ids.numel()):
            chosen = candidates[position][valid[position]]  # [<=k]
            outcome = verifier(target_probs[position], draft_probs[position], chosen, generator)
            reached = k if outcome.accepted_index is None else outcome.accepted_index + 1
            tried[:reached] += 1
            if outcome.accepted_index is not None:
                accepted[outcome.accepted_index] += 1
    return (accepted / tried.clamp_min(1)).tolist()
