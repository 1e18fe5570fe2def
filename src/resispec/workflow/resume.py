"""Append-only JSONL files that survive a killed job: each line is written whole and fsynced, and a
torn last line (a job killed mid-write) is dropped when the file is read back."""

from __future__ import annotations

import json
import os
from pathlib import Path


def read_complete_lines(path: str | Path) -> list[dict]:
    """Every complete JSON line of `path` (none if it does not exist); rewrites away a torn tail."""
    path = Path(path)
    if not path.exists():
        return []
    rows, good_bytes = [], 0
    with open(path, "rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                break
            good_bytes += len(line)
    if good_bytes != path.stat().st_size:
        with open(path, "r+b") as handle:
            handle.truncate(good_bytes)
    return rows


def append_line(path: str | Path, row: dict) -> None:
    """Append one JSON line and make it durable before returning."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def finalise(partial: str | Path, final: str | Path) -> None:
    """Publish a finished partial file under its final name (atomic rename)."""
    os.replace(partial, final)
