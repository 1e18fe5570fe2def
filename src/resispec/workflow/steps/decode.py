"""`resispec decode`: one decoding run (a sheet configuration) with each of its methods.

Raw per-prompt records are appended to `<records>.partial` as each (method, prompt) finishes, and the
audited nodes to `<audit>.partial.jsonl`; a killed job resumes from its last finished prompt. Each
prompt's torch.Generator seed derives from the base seed, the run, the method and the prompt id, so
reruns are identical and a resumed job produces what an uninterrupted one would have.
"""

from __future__ import annotations

import hashlib
import logging
import time
from pathlib import Path

from resispec.workflow.steps.common import add_settings, json_arg, model_dir, set_threads

HELP = "run one decoding run: raw per-prompt records (JSONL) and audited node distributions"
log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    parser.add_argument("--prompts", required=True, help="prompts JSONL of the run's dataset")
    parser.add_argument("--target", required=True, help="READY.json of the target model")
    parser.add_argument("--draft", required=True, help="READY.json of the draft model or EAGLE head")
    parser.add_argument("--profile", help="pair profile JSON (runs with sequoia or auto trees)")
    parser.add_argument("--records", required=True, help="output raw records JSONL")
    parser.add_argument("--audit", required=True, help="output audit file (.pt)")
    parser.add_argument(
        "--job", type=json_arg, required=True, help="the run: configuration and methods (JSON)"
    )
    add_settings(parser)


def prompt_seed(base: int, job: dict, method: str, prompt_id: str) -> int:
    """A 63-bit seed from the base seed, the run's configuration, the method and the prompt id."""
    keys = [str(base)] + [str(job[k]) for k in ("target", "draft", "dataset", "temperature", "tree")]
    digest = hashlib.sha256("|".join(keys + [method, prompt_id]).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def _fail_once(settings: dict, job: dict) -> None:
    """Test hook (testing.fail_once_dir): the first attempt of each run fails after one prompt."""
    directory = settings.get("testing", {}).get("fail_once_dir")
    if not directory:
        return
    marker = Path(directory) / f"{job['run']}.failed-once"
    if not marker.exists():
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text("failed once\n")
        raise RuntimeError(f"testing.fail_once_dir: deliberate first-attempt failure ({marker})")


def run(args) -> int:
    from resispec.corpora import read_prompts
    from resispec.decoding.session import DecodeSession
    from resispec.workflow.run_files import RunFiles

    set_threads(args.threads)
    job, settings = args.job, args.settings
    prompts = read_prompts(args.prompts)[: job["num_prompts"]]
    session = DecodeSession.open(job, settings, model_dir(args.target), model_dir(args.draft), args.profile)
    files = RunFiles(args.records, args.audit)
    done = files.done()
    todo = [(m, p) for m in job["methods"] for p in prompts if (m, p["prompt_id"]) not in done]
    log.info(
        "run %s: %d prompts x %d methods, %d done", job["run"], len(prompts), len(job["methods"]), len(done)
    )
    nodes = per_prompt_nodes(settings, len(prompts))
    start = time.monotonic()
    for index, (method, prompt) in enumerate(todo, 1):
        seed = prompt_seed(settings.get("seed", 0), job, method, prompt["prompt_id"])
        files.append(*session.decode_prompt(method, prompt, seed, nodes))
        elapsed = time.monotonic() - start
        log.info(
            "%s prompt %d/%d done, ETA %.0f s",
            method,
            index,
            len(todo),
            elapsed / index * (len(todo) - index),
        )
        if index == 1:
            _fail_once(settings, job)
    files.publish(job, prompts)
    return 0


def per_prompt_nodes(settings: dict, num_prompts: int) -> int:
    """Audited nodes kept per (method, prompt): audit.max_nodes spread over the prompts."""
    audit = settings.get("audit", {})
    return max(1, -(-audit.get("max_nodes", 2000) // max(num_prompts, 1)))
