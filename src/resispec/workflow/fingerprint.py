"""Fingerprints of a decoding pass's resume files: everything its records depend on (the step, the run,
the rule's settings, the threads, the hashes of the prompts file, of the models' READY.json markers and
of the pair profile). Records left by a killed job are reused only by a job with the same fingerprint;
`difference` says what changed otherwise."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

UNFINGERPRINTED_SETTINGS = ("testing",)  # test hooks: they change no record
HASH_CHARS = 12  # of a sha256 in log lines: enough to tell two files apart by eye


def file_hash(path: str | Path | None) -> str | None:
    """sha256 of a file's bytes (None for no file)."""
    if path is None:
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def run_fingerprint(command: str, args, **extra: Any) -> dict[str, Any]:
    """The fingerprint of one decoding pass (`resispec decode` / `baseline` arguments
    ``args``; a baseline has no draft and no profile)."""
    settings = {k: v for k, v in args.settings.items() if k not in UNFINGERPRINTED_SETTINGS}
    return {
        "command": command,
        "job": args.job,
        "settings": settings,
        "threads": args.threads,
        "prompts_sha256": file_hash(args.prompts),
        "target_ready_sha256": file_hash(args.target),
        "draft_ready_sha256": file_hash(getattr(args, "draft", None)),
        "profile_sha256": file_hash(getattr(args, "profile", None)),
        **extra,
    }


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, sub in value.items():
            out.update(_flat(sub, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _show(key: str, value: Any) -> str:
    if key.endswith("sha256") and isinstance(value, str):
        return value[:HASH_CHARS]
    return repr(value)


def difference(old: dict[str, Any], new: dict[str, Any]) -> str:
    """What differs between two fingerprints, key by key ("" when nothing does)."""
    flat_old, flat_new = _flat(old), _flat(new)
    keys = sorted(k for k in flat_old.keys() | flat_new.keys() if flat_old.get(k) != flat_new.get(k))
    return "; ".join(f"{k}: {_show(k, flat_old.get(k))} -> {_show(k, flat_new.get(k))}" for k in keys)
