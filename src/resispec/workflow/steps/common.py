"""Helpers shared by the workflow steps: settings, model directories (argument types: `cli_types`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from resispec.workflow.cli_types import existing_file, json_object, positive_int


def add_settings(parser) -> None:
    parser.add_argument("--settings", type=json_object, default={}, help="workflow settings (JSON)")
    parser.add_argument("--threads", type=positive_int, default=None, help="torch intra-op threads")


def add_table_inputs(parser) -> None:
    """The tidy tables and per-node exactness CSVs the notebook and the report read."""
    parser.add_argument(
        "--tables", nargs="+", type=existing_file, required=True, help="tidy table CSVs (in one folder)"
    )
    parser.add_argument("--nodes", nargs="*", type=existing_file, default=[], help="per-node exactness CSVs")


def model_dir(ready_file: str | Path) -> Path:
    """A prepared model's directory, given its READY.json marker (ValueError naming the file unless the
    directory still holds its config and weights)."""
    from resispec.models.readiness import require_weights

    require_weights(Path(ready_file).parent, f"READY file {ready_file}")
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
