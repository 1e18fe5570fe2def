"""`resispec exactness`: per verified node of one decoding job, the exact law against the target."""

from __future__ import annotations

import csv
import logging
import time
from pathlib import Path

from resispec.steps._common import add_settings, json_arg

HELP = "exactness audit of one decoding job: KL/TV of the verifier's exact law, acceptance vs alpha*"
log = logging.getLogger(__name__)
COLUMNS = ["method", "dataset", "temperature", "tree", "node", "step", "depth", "k", "vocab"]
COLUMNS += ["kl", "tv", "acceptance", "alpha_star", "law_err"]


def add_arguments(parser) -> None:
    parser.add_argument("--audit", required=True, help="audit file written by `resispec decode`")
    parser.add_argument("--nodes", required=True, help="output CSV, one row per verified node")
    parser.add_argument("--job", type=json_arg, required=True, help="the decoding job (JSON)")
    add_settings(parser)


def run(args) -> int:
    import torch

    from resispec.audit import audit_nodes

    payload = torch.load(args.audit, weights_only=True)
    job, audit = args.job, args.settings.get("audit", {})
    start, rows = time.monotonic(), []
    nodes = payload["nodes"]
    for start_index in range(0, len(nodes), 50):
        chunk = audit_nodes(
            job["method"],
            nodes[start_index : start_index + 50],
            max_histories=audit.get("max_histories", 20000),
        )
        rows += [{**row, "node": row["node"] + start_index} for row in chunk]
        done = min(start_index + 50, len(nodes))
        eta = (time.monotonic() - start) / done * (len(nodes) - done)
        log.info("audited %d/%d nodes of %s, ETA %.0f s", done, len(nodes), job["method"], eta)
    write_rows(args.nodes, [{**_keys(job), **row} for row in rows])
    log.info("wrote %d node rows to %s", len(rows), args.nodes)
    return 0


def _keys(job: dict) -> dict:
    return {key: job[key] for key in ("method", "dataset", "temperature", "tree")}


def write_rows(path: str, rows: list[dict]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(path).with_name(Path(path).name + ".tmp")
    with open(tmp, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    tmp.replace(path)
