"""`resispec baseline`: the timing pass of an autoregressive baseline (the target alone) on one dataset
and temperature, shared by every decoding run of those settings (`resispec.workflow.sheets.group_baselines`).

It is the timing pass of `resispec decode` with one method, ``autoregressive``: the cache sized for the
longest prompt plus its generation, the one-token graph built, the first tokens of the first prompt
decoded as a warm-up and discarded, then every prompt from a seed of the base seed, the baseline's
configuration and the prompt id. The tables pair its records with each run's methods by prompt
(`resispec.audit.aggregate`). Resumable like the timing pass; the workflow runs it alone on the
machine, with all the threads it is given.
"""

from __future__ import annotations

import logging

from resispec.workflow.cli_types import existing_file, json_object
from resispec.workflow.steps.common import add_settings, model_dir, set_threads

HELP = "timing pass of the autoregressive baseline of a target, dataset and temperature: raw records (JSONL)"
log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--prompts", type=existing_file, required=True, help="prompts JSONL of the baseline's dataset"
    )
    parser.add_argument("--target", type=existing_file, required=True, help="READY.json of the target model")
    parser.add_argument("--records", required=True, help="output raw records JSONL")
    parser.add_argument(
        "--job", type=json_object, required=True, help="the baseline: target, dataset, temperature (JSON)"
    )
    add_settings(parser)


def run(args) -> int:
    from resispec.decoding.autoregressive import METHOD
    from resispec.decoding.session import DecodeSession
    from resispec.workflow.fingerprint import run_fingerprint
    from resispec.workflow.run_files import RunFiles
    from resispec.workflow.steps.decode import run_prompts, timing_pass

    set_threads(args.threads)
    job, settings = args.job, args.settings
    if job.get("methods") != [METHOD]:
        wrong = job.get("methods")
        raise ValueError(f"baseline {job.get('run')!r}: methods must be [{METHOD!r}], not {wrong}")
    prompts = run_prompts(args.prompts, job)
    session = DecodeSession.target_only(job, settings, model_dir(args.target))
    files = RunFiles(args.records, fingerprint=run_fingerprint("baseline", args))
    timing_pass(session, job, settings, prompts, files)
    return 0
