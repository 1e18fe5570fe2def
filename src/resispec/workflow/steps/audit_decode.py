"""`resispec audit-decode`: the audit pass of one decoding run, for the exactness audit.

Only the prompts the audit samples are decoded: ``ceil(audit.max_nodes / audit.nodes_per_prompt)``
prompts drawn uniformly (seeded) from the run's prompts, by every method with tree nodes (not
``autoregressive``), from the same seeds as the timing pass (`resispec decode`), so that each
generation repeats the timing pass's tokens. Of each generation, ``audit.nodes_per_prompt`` verified
nodes are sampled uniformly (seeded) and kept with their top-token distributions; ``--full-vocab-nodes``
nodes per method (the workflow: ``audit.full_vocab_nodes`` on the runs of ``audit.full_vocab_tables``,
else 0) keep their full-vocabulary rows (compressed). Resumable like the timing pass.
"""

from __future__ import annotations

import logging
import math
import time

from resispec.workflow.cli_types import nonnegative_int
from resispec.workflow.steps.common import model_dir, set_threads
from resispec.workflow.steps.decode import add_run_arguments, log_progress, run_prompts

HELP = "audit pass of one decoding run: sampled node distributions (.pt) and the pass's raw records"
log = logging.getLogger(__name__)
SELECTION_KEY = "audit-prompt-selection"  # stands in for a prompt id when seeding the prompt selection


def add_arguments(parser) -> None:
    add_run_arguments(parser, "output raw records of the audit pass (JSONL)")
    parser.add_argument("--audit", required=True, help="output audit file (.pt)")
    parser.add_argument(
        "--full-vocab-nodes",
        dest="full_vocab_nodes",
        type=nonnegative_int,
        default=None,
        help="nodes per method that keep their full rows (default: settings audit.full_vocab_nodes, else 4)",
    )


def audit_plans(settings: dict, job: dict, prompts: list[dict], full_vocab_nodes: int | None = None) -> dict:
    """{prompt id: AuditPlan} of the audited prompts, in prompt order."""
    from resispec.decoding.audit_sampling import AuditPlan, audited_prompts, full_rows_per_prompt
    from resispec.decoding.order import prompt_seed

    audit = settings.get("audit", {})
    per_prompt = audit.get("nodes_per_prompt", 8)
    count = math.ceil(audit.get("max_nodes", 2000) / per_prompt)
    seed = prompt_seed(settings.get("seed", 0), job, SELECTION_KEY)
    chosen = audited_prompts([p["prompt_id"] for p in prompts], count, seed)
    full_nodes = audit.get("full_vocab_nodes", 4) if full_vocab_nodes is None else full_vocab_nodes
    full = full_rows_per_prompt(full_nodes, len(chosen))
    return {pid: AuditPlan(per_prompt, rows) for pid, rows in zip(chosen, full, strict=True)}


def run(args) -> int:
    from resispec.decoding.autoregressive import METHOD as AUTOREGRESSIVE
    from resispec.decoding.order import prompt_seed
    from resispec.decoding.session import DecodeSession
    from resispec.workflow.fingerprint import run_fingerprint
    from resispec.workflow.run_files import RunFiles

    set_threads(args.threads)
    job, settings = args.job, args.settings
    prompts = run_prompts(args.prompts, job)
    plans = audit_plans(settings, job, prompts, args.full_vocab_nodes)
    fingerprint = run_fingerprint("audit-decode", args, full_vocab_nodes=args.full_vocab_nodes)
    files = RunFiles(args.records, args.audit, fingerprint)
    done = files.done()
    methods = [m for m in job["methods"] if m != AUTOREGRESSIVE]
    todo = [
        (m, p) for p in prompts if p["prompt_id"] in plans for m in methods if (m, p["prompt_id"]) not in done
    ]
    log.info(
        "run %s (audit pass): %d of %d prompts x %d methods, %d done",
        job["run"],
        len(plans),
        len(prompts),
        len(methods),
        len(done),
    )
    session = (
        DecodeSession.open(job, settings, model_dir(args.target), model_dir(args.draft), args.profile)
        if todo
        else None
    )
    if session is not None:
        session.prepare(prompts)  # the timing pass's cache size: the same attention width, the same tokens
    start = time.monotonic()
    for index, (method, prompt) in enumerate(todo, 1):
        seed = prompt_seed(settings.get("seed", 0), job, prompt["prompt_id"])
        files.append(*session.audit_prompt(method, prompt, seed, plans[prompt["prompt_id"]]))
        log_progress(f"{method} {prompt['prompt_id']}:", index, len(todo), start)
    files.publish({**job, "methods": methods}, prompts)
    return 0
