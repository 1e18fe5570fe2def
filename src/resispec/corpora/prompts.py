"""Prompts built by the paper's protocol: fixed corpus order, N examples, token truncation and a
generation budget; stored as JSON Lines (one prompt per line)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from resispec.corpora.corpus import read_jsonl

log = logging.getLogger(__name__)


def build_prompts(
    corpus_rows: Sequence[dict[str, Any]],
    tokenizer,
    *,
    prompt_tokens: int,
    max_new_tokens: int,
    dataset: str | None = None,
) -> list[dict[str, Any]]:
    """One prompt per document, in order: the first `prompt_tokens` tokens of its text.

    Each prompt is a dict (prompt_id, dataset, input_ids, max_new_tokens). The tokenizer adds its usual
    special tokens (e.g. Llama's BOS) before truncation. Documents that tokenize to nothing are skipped.
    """
    if prompt_tokens < 1 or max_new_tokens < 1:
        raise ValueError(
            f"prompt_tokens ({prompt_tokens}) and max_new_tokens ({max_new_tokens}) must be >= 1"
        )
    prompts = []
    for row in corpus_rows:
        if "text" not in row or "id" not in row:
            raise ValueError(f"corpus row {row.get('id', '?')!r} lacks the key 'id' or 'text'")
        ids = list(tokenizer(row["text"])["input_ids"])[:prompt_tokens]
        if not ids:
            log.warning("document %s tokenizes to nothing; skipped", row["id"])
            continue
        name = dataset or row.get("dataset") or "unknown"
        prompts.append(
            {"prompt_id": str(row["id"]), "dataset": name, "input_ids": ids, "max_new_tokens": max_new_tokens}
        )
    return prompts


def write_prompts(path: str | Path, prompts: Iterable[dict[str, Any]]) -> Path:
    """Write prompts as JSON Lines (one prompt per line), atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        for prompt in prompts:
            handle.write(json.dumps(prompt) + "\n")
    tmp.replace(path)
    return path


def read_prompts(path: str | Path) -> list[dict[str, Any]]:
    """Read a prompts JSONL file written by `write_prompts`."""
    return list(read_jsonl(Path(path)))
