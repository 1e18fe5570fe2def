"""`resispec exactness`: per verified node of one decoding job, the exact law against the target."""

from __future__ import annotations

import csv
import logging
import time
from pathlib import Path

from resispec.workflow.steps.common import add_settings, json_arg

HELP = "exactness audit of one decoding run: KL/TV of each verifier's exact law, acceptance vs alpha*"
log = logging.getLogger(__name__)
COLUMNS = ["method", "dataset", "temperature", "tree", "node", "prompt_id", "step", "depth", "k", "vocab"]
COLUMNS += ["kl", "tv", "kl_lower", "tv_lower", "acceptance", "alpha_star", "bound", "law_err"]


def add_arguments(parser) -> None:
    parser.add_argument("--audit", required=True, help="audit file written by `resispec decode`")
    parser.add_argument("--nodes", required=True, help="output CSV, one row per verified node")
    parser.add_argument("--job", type=json_arg, required=True, help="the decoding run (JSON)")
    add_settings(parser)


def run(args) -> int:
    import torch

    from resispec.audit.exactness import exactness_rows

    nodes = torch.load(args.audit, weights_only=True)["nodes"]
    job, max_histories = args.job, args.settings.get("audit", {}).get("max_histories", 20000)
    start, rows = time.monotonic(), []
    for index, node in enumerate(nodes, 1):
        for row in exactness_rows(node["method"], [node], max_histories=max_histories):
            rows.append({**_keys(job), **row, "method": node["method"], "node": index - 1})
        if index % 50 == 0 or index == len(nodes):
            eta = (time.monotonic() - start) / index * (len(nodes) - index)
            log.info("audited %d/%d nodes, ETA %.0f s", index, len(nodes), eta)
    write_rows(args.nodes, rows)
    log.info("wrote %d node rows to %s", len(rows), args.nodes)
    return 0


def _keys(job: dict) -> dict:
    return {key: job[key] for key in ("dataset", "temperature", "tree")}


def write_rows(path: str, rows: list[dict]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(path).with_name(Path(path).name + ".tmp")
    with open(tmp, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    tmp.replace(path)
