"""What a model directory must hold before it counts as ready (its READY.json written, its source marked
complete): `config.json` and weights (`model.safetensors`, `pytorch_model.bin`, or a sharded index whose
every shard is there), each a non-empty file and not a Git LFS pointer left by a checkout without LFS."""

from __future__ import annotations

import json
from pathlib import Path

SINGLE_FILES = ("model.safetensors", "pytorch_model.bin")  # transformers' names; an EAGLE-1 head: the .bin
INDEXES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")
LFS_POINTER = b"version https://git-lfs"
POINTER_BYTES = 1024  # Git LFS pointer files are ~130 bytes; real weights are far larger


def _weights_problem(path: Path) -> str | None:
    if not path.is_file():  # a dangling symlink (a hub cache blob removed) counts as missing
        return f"{path.name} is missing"
    size = path.stat().st_size
    if size == 0:
        return f"{path.name} is empty"
    if size < POINTER_BYTES and path.read_bytes().startswith(LFS_POINTER):
        return f"{path.name} is a Git LFS pointer, not the weights"
    return None


def weights_problem(model_dir: str | Path) -> str | None:
    """Why ``model_dir`` is not a complete model directory, or None when it is."""
    directory = Path(model_dir)
    if not (directory / "config.json").is_file():
        return "no config.json"
    for name in SINGLE_FILES:
        if (directory / name).exists() or (directory / name).is_symlink():
            return _weights_problem(directory / name)
    for name in INDEXES:
        if (directory / name).is_file():
            shards = sorted(set(json.loads((directory / name).read_text()).get("weight_map", {}).values()))
            if not shards:
                return f"{name} lists no weight files"
            problems = [p for p in (_weights_problem(directory / shard) for shard in shards) if p]
            return problems[0] if problems else None
    return f"no weights ({', '.join(SINGLE_FILES + INDEXES)})"


def require_weights(model_dir: str | Path, what: str) -> None:
    """Raise ValueError naming ``what`` and the directory unless it holds a config and its weights."""
    problem = weights_problem(model_dir)
    if problem:
        raise ValueError(f"{what}: model directory {model_dir} is not ready: {problem}")
