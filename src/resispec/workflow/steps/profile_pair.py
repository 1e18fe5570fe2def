"""`resispec profile-pair`: the pair profile of one (target, draft) on this device (JSON): positional
acceptance per temperature and verifier, and the cost profile that sizes `auto` trees."""

from __future__ import annotations

import json
import logging
import platform

from resispec.workflow.cli_types import existing_file, json_object, temperature
from resispec.workflow.steps.common import add_settings, model_dir, set_threads, write_json

HELP = "measure a (target, draft) pair's positional acceptance and cost profile (JSON)"
log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    parser.add_argument("--target", type=existing_file, required=True, help="READY.json of the target model")
    parser.add_argument(
        "--draft", type=existing_file, required=True, help="READY.json of the draft model or EAGLE head"
    )
    parser.add_argument("--profile", required=True, help="output pair profile (JSON)")
    parser.add_argument(
        "--temperatures", nargs="+", type=temperature, required=True, help="sampling temperatures"
    )
    parser.add_argument("--methods", nargs="+", required=True, help="verifiers whose acceptance is measured")
    parser.add_argument("--profile-settings", type=json_object, required=True, help="config `profile` (JSON)")
    add_settings(parser)


def run(args) -> int:
    import torch

    from resispec.decoding.compiled import EngineModes
    from resispec.decoding.pair_profile import measure_pair
    from resispec.decoding.session import check_tokenizers, dtype_name, load_drafter
    from resispec.models.loading import load_model
    from resispec.models.preparation import heldout_contexts, training_texts

    set_threads(args.threads)
    settings, options = args.settings, args.profile_settings
    device, dtype = settings.get("device", "cpu"), settings.get("dtype", "float32")
    target_dir, draft_dir = model_dir(args.target), model_dir(args.draft)
    check_tokenizers(target_dir, draft_dir)
    target = load_model(target_dir, device=device, dtype=dtype)
    drafter, _ = load_drafter(draft_dir, target, device=device, dtype=dtype)
    texts = training_texts(settings.get("data", {}))
    contexts = heldout_contexts(
        target_dir, texts, count=options["contexts"], length=options["context_tokens"]
    )
    draft = drafter.head if drafter.needs_target_features else drafter.model
    with torch.no_grad():
        profile = measure_pair(
            target,
            draft,
            drafter,
            contexts,
            temperatures=args.temperatures,
            methods=args.methods,
            settings=options,
            modes=EngineModes(compile_mode=settings.get("compile", "auto")),
        )
    profile.meta.update(
        target=str(target_dir),
        draft=str(draft_dir),
        device=device,
        dtype=dtype_name(target),
        host=platform.node(),
    )
    write_json(args.profile, json.loads(profile.to_json()))
    log.info("pair profile written to %s in %.0f s", args.profile, profile.meta["seconds"])
    return 0
