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
import zlib
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
    name: str,
    n: int,
    *,
    data_dir: str | Path | None = None,
    source: str | None = "auto",
    allow_fewer: bool = True,
) -> list[dict[str, Any]]:
    """The first `n` documents of corpus `name` in the source's fixed order, as dicts (id, text, dataset).

    `source`: "auto" (local when a data directory is given or set in the environment, else hub), "local"
    or "hub". A corpus without documents is an error naming its file; fewer than `n` documents give a
    warning and all of them, or with ``allow_fewer=False`` an error naming the file.
    """
    name = canonical_name(name)
    source = source or "auto"
    if source not in SOURCES:
        raise ValueError(f"source {source!r} must be one of {SOURCES}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    directory = data_dir or os.environ.get(DATA_DIR_ENV) or None
    if source == "local" and directory is None:
        raise ValueError(f"dataset {name}: source='local' needs data_dir or {DATA_DIR_ENV}. {_fixes(name)}")
    if source == "local" or (source == "auto" and directory is not None):
        where = local_path(name, Path(directory))
        rows = _load_local(name, n, where)
    else:
        where = f"the hub's {HUB[name].repo} ({HUB[name].split} split)"
        rows = _load_hub(name, n)
    if not rows:
        raise ValueError(f"dataset {name}: {where} holds no documents")
    if len(rows) < n:
        if not allow_fewer:
            raise ValueError(
                f"dataset {name}: {where} holds {len(rows)} documents, fewer than the {n} prompts asked "
                "(data.num_prompts); add documents, lower data.num_prompts, or set "
                "data.allow_fewer_prompts: true to run on the documents there are"
            )
        log.warning(
            "dataset %s: only %d of the %d requested documents exist in %s", name, len(rows), n, where
        )
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


def numbered_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of every non-blank line of a JSON Lines file, plain or gzipped; ValueError
    names the file and line of a truncated or corrupt gzip, bad UTF-8, bad JSON or a non-object line."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    opener = gzip.open if path.name.endswith(".gz") else open
    line_no = 0
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            for line_no, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{line_no}: not valid JSON ({exc.msg})") from exc
                if not isinstance(row, dict):
                    raise ValueError(f"{path}:{line_no}: not a JSON object (a {type(row).__name__})")
                yield line_no, row
    except (EOFError, OSError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
        raise ValueError(f"{path}: truncated or corrupt after line {line_no} ({exc})") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}:{line_no + 1}: not UTF-8 text ({exc.reason})") from exc


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The objects of a JSON Lines file (`numbered_jsonl` without the line numbers)."""
    for _, row in numbered_jsonl(Path(path)):
        yield row


def _document(row: dict[str, Any], where: str) -> tuple[str, str]:
    for key in ("id", "text"):
        if key not in row:
            raise ValueError(f"{where}: lacks the key {key!r} (each line needs 'id' and 'text')")
    if not isinstance(row["text"], str) or not row["text"].strip():
        raise ValueError(f"{where}: 'text' must be a non-empty string, got {row['text']!r:.60}")
    if isinstance(row["id"], dict | list) or row["id"] is None or str(row["id"]).strip() == "":
        raise ValueError(f"{where}: 'id' must be a non-empty string or number, got {row['id']!r:.60}")
    return str(row["id"]), row["text"]


def _load_local(name: str, n: int, path: Path) -> list[dict[str, Any]]:
    rows, seen = [], {}
    for line_no, row in numbered_jsonl(path):
        doc_id, text = _document(row, f"{path}:{line_no}")
        if doc_id in seen:
            raise ValueError(f"{path}:{line_no}: id {doc_id!r} repeats line {seen[doc_id]}'s")
        seen[doc_id] = line_no
        rows.append({"id": doc_id, "text": text, "dataset": name})
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
