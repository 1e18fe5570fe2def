"""`resispec decode`: the timing pass of one decoding run (a sheet configuration) with each of its methods,
which also keeps the exactness audit's nodes.

The caches are sized once for the run and every compiled graph is built first (``DecodeSession.prepare``);
then every method decodes the first ``WARMUP_NEW_TOKENS`` tokens of the first prompt, discarded (the
warm-up); then the methods are interleaved per prompt (their order rotating from one prompt to the next),
and every method decodes a prompt from the same seed, derived from the base seed, the run and the prompt
id (not the method). With ``--audit``, on the prompts the audit samples
(`resispec.decoding.audit_sampling.audit_plans`: ``ceil(audit.max_nodes / audit.nodes_per_prompt)``
prompts, seeded) each method with tree nodes keeps ``audit.nodes_per_prompt`` verified nodes sampled
uniformly along its generation with their top-token distributions, and ``--full-vocab-nodes`` nodes per
method (the workflow: ``audit.full_vocab_nodes`` on the runs of ``audit.full_vocab_tables``, else 0)
their full-vocabulary rows (compressed): the step copies the visited nodes' rows, and the entries are
built after the generation is timed (docs/reproduction-notes.md, "The audit's nodes from the timing
pass"). Raw records (and audited nodes) are appended to `<records>.partial` as each (method, prompt)
finishes; a killed job resumes from its last finished prompt, and reruns are identical. The workflow runs
this job alone on the machine, with all the threads it is given.
"""

from __future__ import annotations

import argparse
import logging
import re
import time
from pathlib import Path

from resispec.workflow.cli_types import existing_file, json_object, nonnegative_int
from resispec.workflow.steps.common import add_settings, model_dir, set_threads

HELP = "timing pass of one decoding run: raw per-prompt records (JSONL) and the audit's sampled nodes (.pt)"
log = logging.getLogger(__name__)


def decoding_job(text: str) -> dict:
    """argparse type: the run as a JSON object whose tree spec the parser of `generate` and the sheets
    accepts (a spec of more nodes than the cap stops here, before any model loads or resume file is read)."""
    from resispec.decoding.arguments import tree_spec

    job = json_object(text)
    if "tree" in job:
        try:
            tree_spec(job["tree"])
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return job


def add_run_arguments(parser, records_help: str) -> None:
    """The options of a run's timing pass (and of a baseline's, with no draft)."""
    parser.add_argument(
        "--prompts", type=existing_file, required=True, help="prompts JSONL of the run's dataset"
    )
    parser.add_argument("--target", type=existing_file, required=True, help="READY.json of the target model")
    parser.add_argument(
        "--draft", type=existing_file, required=True, help="READY.json of the draft model or EAGLE head"
    )
    parser.add_argument(
        "--profile", type=existing_file, help="pair profile JSON (runs with sequoia or auto trees)"
    )
    parser.add_argument("--records", required=True, help=records_help)
    parser.add_argument(
        "--job", type=decoding_job, required=True, help="the run: configuration and methods (JSON)"
    )
    add_settings(parser)


def add_arguments(parser) -> None:
    add_run_arguments(parser, "output raw records JSONL")
    parser.add_argument("--audit", help="output audit file (.pt) of the sampled nodes (default: no audit)")
    parser.add_argument(
        "--full-vocab-nodes",
        dest="full_vocab_nodes",
        type=nonnegative_int,
        default=None,
        help="nodes per method that keep their full rows (default: settings audit.full_vocab_nodes, else 4)",
    )


def run_prompts(path: str, job: dict) -> list[dict]:
    """The run's prompts: the first ``num_prompts`` of the prompts file, which must hold that many."""
    from resispec.corpora import read_prompts

    prompts, wanted = read_prompts(path), job["num_prompts"]
    if len(prompts) < wanted:
        raise ValueError(
            f"prompts file {path} holds {len(prompts)} prompts; run {job['run']} needs num_prompts={wanted} "
            "(rebuild the prompts with enough corpus documents, or lower num_prompts)"
        )
    return prompts[:wanted]


def fail_once(settings: dict, job: dict) -> None:
    """Test hook (testing.fail_once_dir): the first attempt of each run (of the runs whose id
    testing.fail_once_runs matches, if set) fails after one prompt."""
    testing = settings.get("testing", {})
    directory, pattern = testing.get("fail_once_dir"), testing.get("fail_once_runs")
    if not directory or (pattern and not re.search(pattern, job["run"])):
        return
    marker = Path(directory) / f"{job['run']}.failed-once"
    if not marker.exists():
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("failed once\n")
        raise RuntimeError(f"testing.fail_once_dir: deliberate first-attempt failure ({marker})")


def log_progress(what: str, index: int, total: int, start: float) -> None:
    elapsed = time.monotonic() - start
    log.info("%s %d/%d done, ETA %.0f s", what, index, total, elapsed / index * (total - index))


def timing_pass(session, job: dict, settings: dict, prompts: list[dict], files, plans=None) -> None:
    """Decode every (method, prompt) of ``job`` not yet in ``files``: the caches sized and the graphs built
    first, each method's warm-up (``warm_up_prompt``) discarded, then the methods interleaved per prompt,
    the prompts of ``plans`` ({prompt id: AuditPlan}) keeping their audited nodes; publish."""
    from resispec.decoding.order import interleaved, prompt_seed, warm_up_prompt

    plans = plans or {}
    done = files.done()
    todo = interleaved(job["methods"], prompts, done)
    log.info(
        "run %s (timing pass): %d prompts x %d methods, %d done, %d prompts audited",
        job["run"],
        len(prompts),
        len(job["methods"]),
        len(done),
        len(plans),
    )
    seed = lambda prompt: prompt_seed(settings.get("seed", 0), job, prompt["prompt_id"])  # noqa: E731
    if todo:
        start = time.monotonic()
        session.prepare(prompts)  # the run's cache size, every compiled graph built
        prepared = time.monotonic()
        warm = warm_up_prompt(prompts[0])
        for method in job["methods"]:  # with an audit, its copies warmed up too
            session.timing_prompt(method, warm, seed(warm), next(iter(plans.values()), None))
        log.info("prepared in %.1f s, warmed up in %.1f s", prepared - start, time.monotonic() - prepared)
    start = time.monotonic()
    for index, (method, prompt) in enumerate(todo, 1):
        files.append(*session.timing_prompt(method, prompt, seed(prompt), plans.get(prompt["prompt_id"])))
        log_progress(f"{method} {prompt['prompt_id']}:", index, len(todo), start)
        if index == 1:
            fail_once(settings, job)
    files.publish(job, prompts)


def run(args) -> int:
    from resispec.decoding.audit_sampling import audit_plans
    from resispec.decoding.session import DecodeSession
    from resispec.workflow.fingerprint import run_fingerprint
    from resispec.workflow.run_files import RunFiles

    set_threads(args.threads)
    job, settings = args.job, args.settings
    prompts = run_prompts(args.prompts, job)
    plans = audit_plans(settings, job, prompts, args.full_vocab_nodes) if args.audit else {}
    session = DecodeSession.open(job, settings, model_dir(args.target), model_dir(args.draft), args.profile)
    fingerprint = run_fingerprint(
        "decode", args, full_vocab_nodes=args.full_vocab_nodes, audit=bool(args.audit)
    )
    timing_pass(session, job, settings, prompts, RunFiles(args.records, args.audit, fingerprint), plans)
    return 0
