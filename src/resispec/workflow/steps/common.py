"""Helpers shared by the workflow steps: JSON options, settings, model directories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def json_arg(text: str) -> Any:
    """argparse type for JSON-valued options (the workflow passes settings and jobs as JSON)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {text[:80]!r}") from exc


def add_settings(parser) -> None:
    parser.add_argument("--settings", type=json_arg, default={}, help="workflow settings (JSON)")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")


def model_dir(ready_file: str | Path) -> Path:
    """A prepared model's directory, given its READY.json marker."""
    return Path(ready_file).parent


def set_threads(threads: int | None) -> None:
    import torch

    if threads:
        torch.set_num_threads(threads)


def write_json(path: str | Path, payload: Any) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
