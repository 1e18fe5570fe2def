"""Preparing one model of the config: its training text, held-out contexts, and materializing a source
(`hf:`, `pypi:`, `local:` or `tiny:`) into a model directory."""

from __future__ import annotations

import logging
from pathlib import Path

import torch

log = logging.getLogger(__name__)


def training_texts(data: dict) -> list[str]:
    """Training text: every local/hub document after the first `num_prompts` of each corpus, so the
    evaluation prompts are never trained on."""
    from resispec.corpora import load_corpus

    held_out = data.get("num_prompts", 200)
    texts = []
    for name in data.get("datasets", []):
        rows = load_corpus(name, held_out + data.get("train_documents", 2000), data_dir=data.get("dir"))
        texts += [row["text"] for row in rows[held_out:]]
    if not texts:
        raise ValueError("no training documents left after the evaluation prompts; add corpus documents")
    return texts


def materialize_model(source: str, dest: Path) -> dict:
    """Materialize any model source into `dest`; returns the READY.json fields it contributes."""
    from resispec.models import sources, tiny

    if source.startswith("tiny:"):
        tiny.build(source.removeprefix("tiny:"), dest)
    else:
        sources.materialize(source, dest)
    return {"kind": "source", "source": source}


def heldout_contexts(
    target_dir: Path, texts: list[str], *, count: int | None = None, length: int = 64
) -> list:
    """The documents training holds out (`distill.split_heldout`: never trained on), as token-id
    tensors of at most `length` tokens (those of >= 8 tokens); the first `count` of them (None: all)."""
    from resispec.models.distill import split_heldout, tokenize_texts
    from resispec.models.loading import load_tokenizer

    _, held = split_heldout(tokenize_texts(texts, load_tokenizer(target_dir)))
    return [torch.tensor(ids[:length]) for ids in held if len(ids) >= 8][:count]
