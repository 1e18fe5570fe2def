"""Evaluation corpora (CNN/DailyMail, OpenWebText, C4) from a local directory or the Hugging Face hub.

Local directory: one file per corpus, `{name}.jsonl.gz` or `{name}.jsonl`, one JSON object per line with
at least `id` and `text`. The directory comes from `data_dir`, else the environment variable
`RESISPEC_DATA_DIR`; without either the corpus is streamed from the hub.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DATA_DIR_ENV = "RESISPEC_DATA_DIR"
SOURCES = ("auto", "local", "hub")


@dataclass(frozen=True)
class HubCorpus:
    """Where a corpus lives on the Hugging Face hub."""

    repo: str
    config: str | None
    split: str
    text_field: str
    id_field: str | None


HUB = {
    "cnn_dailymail": HubCorpus("abisee/cnn_dailymail", "3.0.0", "test", "article", "id"),
    "openwebtext": HubCorpus("Skylion007/openwebtext", None, "train", "text", None),
    "c4": HubCorpus("allenai/c4", "en", "validation", "text", None),
}
ALIASES = {
    "cnn_dm": "cnn_dailymail",
    "cnndm": "cnn_dailymail",
    "cnn-dailymail": "cnn_dailymail",
    "cnn/dm": "cnn_dailymail",
    "owt": "openwebtext",
    "c4_en": "c4",
    "c4-en": "c4",
}


def canonical_name(name: str) -> str:
    """The canonical corpus name for `name` or an alias; ValueError lists the known names."""
    key = str(name).strip().lower()
    key = ALIASES.get(key, key)
    if key not in HUB:
        known = ", ".join(sorted(HUB) + sorted(ALIASES))
        raise ValueError(f"dataset {name!r} is unknown; known names: {known}")
    return key


def _fixes(name: str) -> str:
    return (
        f"To fix: put {name}.jsonl.gz (or {name}.jsonl) with fields id, text into a directory and set "
        f"{DATA_DIR_ENV} (or config data.dir / data_dir=) to it, or allow network access to the Hugging Face "
        f"hub ({HUB[name].repo})."
    )


def load_corpus(
    name: str, n: int, *, data_dir: str | Path | None = None, source: str | None = "auto"
) -> list[dict[str, Any]]:
    """The first `n` documents of corpus `name` in the source's fixed order, as dicts (id, text, dataset).

    `source`: "auto" (local when a data directory is given or set in the environment, else hub), "local"
    or "hub". Fewer than `n` documents available locally gives a warning and all of them.
    """
    name = canonical_name(name)
    source = source or "auto"
    if source not in SOURCES:
        raise ValueError(f"source {source!r} must be one of {SOURCES}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    directory = data_dir or os.environ.get(DATA_DIR_ENV) or None
    if source == "local" and directory is None:
        raise ValueError(f"dataset {name}: source='local' needs data_dir or {DATA_DIR_ENV}. {_fixes(name)}")
    if source == "local" or (source == "auto" and directory is not None):
        rows = _load_local(name, n, Path(directory))
    else:
        rows = _load_hub(name, n)
    if len(rows) < n:
        log.warning("dataset %s: only %d of the %d requested documents exist", name, len(rows), n)
    return rows


def local_path(name: str, data_dir: str | Path) -> Path:
    """`{name}.jsonl.gz` or `{name}.jsonl` in `data_dir`; FileNotFoundError names both fixes."""
    name = canonical_name(name)
    for suffix in (".jsonl.gz", ".jsonl"):
        path = Path(data_dir) / f"{name}{suffix}"
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"dataset {name}: no {name}.jsonl.gz or {name}.jsonl in {data_dir}. {_fixes(name)}"
    )


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{line_no}: not valid JSON ({exc.msg})") from exc


def _load_local(name: str, n: int, data_dir: Path) -> list[dict[str, Any]]:
    path = local_path(name, data_dir)
    rows = []
    for row in read_jsonl(path):
        if "id" not in row or "text" not in row:
            raise ValueError(f"{path}: row {len(rows) + 1} lacks the key 'id' or 'text'")
        rows.append({"id": str(row["id"]), "text": str(row["text"]), "dataset": name})
        if len(rows) == n:
            break
    log.info("dataset %s: %d documents from %s", name, len(rows), path)
    return rows


def _load_hub(name: str, n: int) -> list[dict[str, Any]]:
    import datasets

    spec = HUB[name]
    try:
        stream = datasets.load_dataset(spec.repo, spec.config, split=spec.split, streaming=True)
        rows = _take(name, spec, stream, n)
    except Exception as exc:  # offline hub errors come in many types
        raise RuntimeError(
            f"dataset {name}: could not stream {spec.repo} ({spec.config}, {spec.split}) from the hub "
            f"({type(exc).__name__}: {exc}). {_fixes(name)}"
        ) from exc
    return rows


def _take(name: str, spec: HubCorpus, stream: Iterable[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    rows, start = [], time.monotonic()
    for index, row in enumerate(stream):
        doc_id = row.get(spec.id_field) if spec.id_field else None
        rows.append(
            {"id": str(doc_id or f"{name}-{index:07d}"), "text": row[spec.text_field], "dataset": name}
        )
        if len(rows) == n:
            break
        if len(rows) % 100 == 0:
            rate = len(rows) / max(time.monotonic() - start, 1e-9)
            log.info("dataset %s: %d/%d documents, ETA %.0f s", name, len(rows), n, (n - len(rows)) / rate)
    return rows
