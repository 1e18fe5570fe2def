"""`resispec prepare-model`: one model of the config, ready for decoding (READY.json last)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from resispec.workflow.steps.common import add_settings, json_arg, model_dir, set_threads, write_json

HELP = "materialize a model source, distil a draft or train an EAGLE-1 head; write READY.json"
log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    parser.add_argument("--ready", required=True, help="output READY.json (in the model's directory)")
    parser.add_argument("--model", required=True, help="model name (a key of `models`)")
    parser.add_argument("--spec", type=json_arg, required=True, help="the model's config entry (JSON)")
    parser.add_argument("--teacher", help="READY.json of the target a draft or head is trained on")
    add_settings(parser)


def _train_draft(spec: dict, teacher: Path, dest: Path, settings: dict) -> dict:
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
        layers=train["layers"],
        hidden=train["hidden"],
        steps=train["steps"],
        minutes_budget=train["minutes"],
        seq_len=train["seq_len"],
        seed=settings.get("seed", 0),
        device=settings.get("device", "cpu"),
    )
    device = settings.get("device", "cpu")
    target, draft = load_model(teacher, device=device), load_model(dest, device=device)
    report["position_acceptance"] = position_acceptance(target, draft, heldout_contexts(teacher, texts))
    return {"kind": "draft", "teacher": train["target"], **report}


def _train_eagle(spec: dict, teacher: Path, dest: Path, settings: dict) -> dict:
    from resispec.models.eagle_training import train as train_eagle_head
    from resispec.models.preparation import training_texts

    eagle = spec["eagle"]
    report = train_eagle_head(
        teacher,
        dest,
        texts=training_texts(settings.get("data", {})),
        steps=eagle["steps"],
        minutes_budget=eagle["minutes"],
        seq_len=eagle["seq_len"],
        seed=settings.get("seed", 0),
        device=settings.get("device", "cpu"),
    )
    return {"kind": "eagle", "teacher": eagle["target"], **report}


def run(args) -> int:
    from resispec.models.preparation import materialize_model

    set_threads(args.threads)
    dest, start = model_dir(args.ready), time.monotonic()
    dest.mkdir(parents=True, exist_ok=True)
    spec = args.spec
    if "source" in spec:
        info = materialize_model(spec["source"], dest)
        if spec.get("head_of"):
            info.update(kind="eagle", teacher=spec["head_of"])
    elif "train" in spec:
        info = _train_draft(spec, model_dir(args.teacher), dest, args.settings)
    else:
        info = _train_eagle(spec, model_dir(args.teacher), dest, args.settings)
    info.update(model=args.model, seconds=round(time.monotonic() - start, 1))
    write_json(args.ready, info)
    log.info("model %s ready in %.0f s: %s", args.model, time.monotonic() - start, info.get("acceptance"))
    return 0
