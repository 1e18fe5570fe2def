"""`resispec exactness`: per audited node of one decoding run, the exact law of its verifier against
the target: on the lumped top-token vocabulary (scope "lumped", every audited node) and on the full
vocabulary (scope "full", the nodes whose full rows the timing pass kept), with a Monte Carlo
cross-check of the real sampler on the first ``--monte-carlo-nodes`` full-vocabulary resispec nodes."""

from __future__ import annotations

import csv
import hashlib
import logging
import time
from pathlib import Path

from resispec.workflow.cli_types import existing_file, json_object, nonnegative_int
from resispec.workflow.steps.common import add_settings

HELP = "exactness audit of one decoding run: KL/TV of each verifier's exact law, acceptance vs alpha*"
log = logging.getLogger(__name__)
COLUMNS = ["method", "scope", "dataset", "temperature", "tree", "node", "prompt_id", "step", "position"]
COLUMNS += ["verified_nodes", "depth", "k", "vocab", "kl", "kl_upper", "tv", "tv_upper", "acceptance"]
COLUMNS += ["alpha_star", "bound", "law_err", "mc_draws", "mc_acceptance", "mc_acceptance_low"]
COLUMNS += ["mc_acceptance_high"]
COLUMNS += ["mc_tv", "mc_tv_low", "mc_tv_high", "mc_consistent"]


def add_arguments(parser) -> None:
    parser.add_argument(
        "--audit", type=existing_file, required=True, help="audit file written by `resispec decode --audit`"
    )
    parser.add_argument("--nodes", required=True, help="output CSV, one row per (audited node, scope)")
    parser.add_argument("--job", type=json_object, required=True, help="the decoding run (JSON)")
    parser.add_argument(
        "--monte-carlo-nodes",
        dest="monte_carlo_nodes",
        type=nonnegative_int,
        default=0,
        help="full-vocabulary resispec nodes cross-checked by Monte Carlo (audit.monte_carlo_draws each)",
    )
    parser.add_argument("--variants", help="output CSV: every (budget, order) variant of resispec per node")
    parser.add_argument(
        "--variant-nodes",
        dest="variant_nodes",
        type=int,
        default=0,
        help="audited resispec nodes (spread over the run) whose law is computed for every variant",
    )
    add_settings(parser)


def monte_carlo_seed(base: int, run: str) -> int:
    digest = hashlib.sha256(f"{base}|{run}|monte-carlo".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def lumped_rows(nodes: list[dict], job: dict, max_histories: int) -> list[dict]:
    from resispec.audit.exactness import exactness_rows

    start, rows = time.monotonic(), []
    for index, node in enumerate(nodes, 1):
        for row in exactness_rows(node["method"], [node], max_histories=max_histories):
            rows.append({**_keys(job), **row, "method": node["method"], "node": index - 1})
        if index % 50 == 0 or index == len(nodes):
            eta = (time.monotonic() - start) / index * (len(nodes) - index)
            log.info("lumped audit: %d/%d nodes, ETA %.0f s", index, len(nodes), eta)
    return rows


def full_rows(nodes: list[dict], job: dict, settings: dict, mc_nodes: int) -> list[dict]:
    import torch

    from resispec.audit.exactness import EXACTNESS_METHODS
    from resispec.audit.full_vocab import MonteCarlo, full_vocab_rows

    audit = settings.get("audit", {})
    generator = torch.Generator().manual_seed(monte_carlo_seed(settings.get("seed", 0), job["run"]))
    mc = MonteCarlo(mc_nodes, audit.get("monte_carlo_draws", 100000), generator)
    start = time.monotonic()

    def progress(done: int, total: int, row: dict) -> None:
        eta = (time.monotonic() - start) / done * (total - done)
        log.info(
            "full-vocabulary audit: %d/%d nodes (law_err %.2g), ETA %.0f s", done, total, row["law_err"], eta
        )

    mine = [dict(node, node_index=i) for i, node in enumerate(nodes) if node["method"] in EXACTNESS_METHODS]
    rows = full_vocab_rows(mine, state_mb=audit.get("full_vocab_state_mb", 100), mc=mc, progress=progress)
    return [{**_keys(job), **row, "node": mine[row["node"]]["node_index"]} for row in rows]


def run(args) -> int:
    import torch

    nodes = torch.load(args.audit, weights_only=True)["nodes"]
    job, audit = args.job, args.settings.get("audit", {})
    rows = lumped_rows(nodes, job, audit.get("max_histories", 20000))
    rows += full_rows(nodes, job, args.settings, args.monte_carlo_nodes)
    write_rows(args.nodes, rows)
    log.info("wrote %d node rows to %s", len(rows), args.nodes)
    if args.variants:
        write_variants(args.variants, nodes, args.variant_nodes, audit.get("max_histories", 20000))
    return 0


def write_variants(path: str, nodes: list[dict], wanted: int, max_histories: int) -> None:
    from resispec.audit.variants import COLUMNS as VARIANT_COLUMNS
    from resispec.audit.variants import VARIANTS, variant_rows

    start = time.monotonic()
    rows = variant_rows(nodes, wanted, max_histories=max_histories)
    write_rows(path, rows, VARIANT_COLUMNS)
    log.info(
        "variants: %d nodes x %d (budget, order) variants of resispec in %.0f s -> %s",
        len(rows) // len(VARIANTS),
        len(VARIANTS),
        time.monotonic() - start,
        path,
    )


def _keys(job: dict) -> dict:
    return {key: job[key] for key in ("dataset", "temperature", "tree")}


def write_rows(path: str, rows: list[dict], columns=COLUMNS) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(path).with_name(Path(path).name + ".tmp")
    with open(tmp, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    tmp.replace(path)
