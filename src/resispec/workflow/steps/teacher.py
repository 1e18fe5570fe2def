"""`resispec teacher`: one part of a shared teacher pass (`resispec.models.teacher`): the target's top-k
labels (and features, for EAGLE heads) of a range of the chunks that the models trained on it share."""

from __future__ import annotations

import logging
import time

from resispec.workflow.cli_types import existing_file, json_object
from resispec.workflow.steps.common import add_settings, model_dir, set_threads

HELP = "one part of a shared teacher pass: the target's labels of a range of the training chunks (.pt)"
log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    parser.add_argument("--target", type=existing_file, required=True, help="READY.json of the target")
    parser.add_argument("--labels", required=True, help="output: the part's labels (.pt)")
    parser.add_argument(
        "--labelling",
        type=json_object,
        required=True,
        help="the pass and the part (JSON: options, teacher_tokens, features, first, last)",
    )
    add_settings(parser)


def run(args) -> int:
    from resispec.models.allocator import huge_page_allocations

    huge_page_allocations()  # before torch is imported
    from resispec.models.distill import load_teacher
    from resispec.models.preparation import training_texts
    from resispec.models.teacher import label_options, label_part, save_part
    from resispec.models.training import TrainOptions, pinned_threads
    from resispec.workflow.steps.prepare_model import train_options

    set_threads(args.threads)
    job, start = args.labelling, time.monotonic()
    block = {**job["options"], "teacher_tokens": job["teacher_tokens"]}
    opts = TrainOptions(**train_options(block, args.settings))
    texts = training_texts(args.settings.get("data", {}))
    with pinned_threads(opts.threads):
        target, (chunks, _, _) = load_teacher(
            model_dir(args.target), opts, texts=texts, token_ids=None, heldout=None, caller="teacher"
        )
        part = label_part(target, chunks, opts, job["first"], job["last"], features=job["features"])
    save_part(args.labels, part, label_options(opts), job["first"])
    labelled = 0 if part is None else part.tokens.shape[0]
    log.info(
        "teacher part: chunks %d-%d (%d labelled) in %.0f s -> %s",
        job["first"],
        job["last"],
        labelled,
        time.monotonic() - start,
        args.labels,
    )
    return 0
