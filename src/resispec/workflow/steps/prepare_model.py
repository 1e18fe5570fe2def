"""`resispec prepare-model`: one model of the config, ready for decoding (READY.json last)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from resispec.workflow.cli_types import existing_file, json_object
from resispec.workflow.steps.common import add_settings, model_dir, set_threads, write_json

HELP = "materialize a model source, distil a draft or train an EAGLE-1 head; write READY.json"
log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    parser.add_argument("--ready", required=True, help="output READY.json (in the model's directory)")
    parser.add_argument("--model", required=True, help="model name (a key of `models`)")
    parser.add_argument("--spec", type=json_object, required=True, help="the model's config entry (JSON)")
    parser.add_argument(
        "--teacher", type=existing_file, help="READY.json of the target a draft or head is trained on"
    )
    parser.add_argument(
        "--teacher-labels",
        dest="teacher_labels",
        nargs="+",
        type=existing_file,
        help="the parts of the shared teacher pass holding the model's chunks (`resispec teacher`); "
        "none: the model's own teacher pass",
    )
    add_settings(parser)


ARCH_KEYS = ("init", "layers", "source_layers", "hidden", "intermediate", "vocab")
BUDGET_KEYS = ("loss", "temperatures", "teacher_tokens", "steps", "batch_size", "seq_len", "lr", "amp")


def train_options(block: dict, settings: dict) -> dict:
    """TrainOptions of a `train` / `eagle` block: its budget keys plus the run's seed, device, threads."""
    options = {key: block[key] for key in BUDGET_KEYS if key in block}
    if "temperatures" in options:
        options["temperatures"] = tuple(options["temperatures"])
    return {
        **options,
        "seed": settings.get("seed", 0),
        "device": settings.get("device", "cpu"),
        "threads": settings.get("threads") or 1,
    }


def _train_draft(spec: dict, teacher: Path, labels: list | None, dest: Path, settings: dict) -> dict:
    from resispec.decoding.profile import position_acceptance
    from resispec.models.draft_training import train_draft
    from resispec.models.loading import load_model
    from resispec.models.preparation import heldout_contexts, training_texts

    texts = training_texts(settings.get("data", {}))
    train = spec["train"]
    report = train_draft(
        teacher,
        dest,
        texts=texts,
        arch={key: train[key] for key in ARCH_KEYS if key in train},
        max_compute_ratio=train.get("max_compute_ratio", 0.15),
        teacher=labels,
        **train_options(train, settings),
    )
    device = settings.get("device", "cpu")
    target, draft = load_model(teacher, device=device), load_model(dest, device=device)
    report["position_acceptance"] = position_acceptance(target, draft, heldout_contexts(teacher, texts))
    return {"kind": "draft", "teacher": train["target"], **report}


def _train_eagle(spec: dict, teacher: Path, labels: list | None, dest: Path, settings: dict) -> dict:
    from resispec.models.eagle_training import train as train_eagle_head
    from resispec.models.preparation import training_texts

    eagle = spec["eagle"]
    report = train_eagle_head(
        teacher,
        dest,
        texts=training_texts(settings.get("data", {})),
        vocab=eagle.get("vocab"),
        teacher=labels,
        **train_options(eagle, settings),
    )
    return {"kind": "eagle", "teacher": eagle["target"], **report}


def run(args) -> int:
    from resispec.models.allocator import huge_page_allocations

    huge_page_allocations()  # before torch is imported
    from resispec.models.preparation import materialize_model
    from resispec.models.readiness import require_weights

    set_threads(args.threads)
    dest, start = Path(args.ready).parent, time.monotonic()  # the output: not ready yet
    dest.mkdir(parents=True, exist_ok=True)
    spec = args.spec
    if "source" in spec:
        info = materialize_model(spec["source"], dest)
        if spec.get("head_of"):
            info.update(kind="eagle", teacher=spec["head_of"])
    elif "train" in spec:
        info = _train_draft(spec, model_dir(args.teacher), args.teacher_labels, dest, args.settings)
    else:
        info = _train_eagle(spec, model_dir(args.teacher), args.teacher_labels, dest, args.settings)
    info.update(model=args.model, seconds=round(time.monotonic() - start, 1))
    require_weights(dest, f"model {args.model}")  # READY.json only over a directory with its weights
    write_json(args.ready, info)
    log.info("model %s ready in %.0f s: %s", args.model, time.monotonic() - start, info.get("acceptance"))
    return 0
