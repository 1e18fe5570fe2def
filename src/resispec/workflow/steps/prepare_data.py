"""`resispec prepare-data`: one corpus -> prompts JSONL, tokenised for one target model."""

from __future__ import annotations

import logging
from pathlib import Path

from resispec.workflow.cli_types import dataset_name, existing_file
from resispec.workflow.steps.common import add_settings, model_dir

HELP = "build the prompt file of one dataset for one target model (paper protocol)"
log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--model", type=existing_file, required=True, help="READY.json of the target model (its tokenizer)"
    )
    parser.add_argument("--prompts", required=True, help="output prompts JSONL")
    parser.add_argument(
        "--dataset", type=dataset_name, required=True, help="cnn_dailymail, openwebtext or c4"
    )
    parser.add_argument(
        "--corpus",
        type=existing_file,
        help="the local corpus file (the workflow's input; default: data.dir, else the hub)",
    )
    add_settings(parser)


def run(args) -> int:
    from resispec.corpora import build_prompts, load_corpus, write_prompts
    from resispec.models.loading import load_tokenizer

    data = args.settings.get("data", {})
    rows = load_corpus(
        args.dataset,
        data.get("num_prompts", 200),
        data_dir=Path(args.corpus).parent if args.corpus else data.get("dir"),
        allow_fewer=data.get("allow_fewer_prompts", False),
    )
    tokenizer = load_tokenizer(model_dir(args.model))
    prompts = build_prompts(
        rows,
        tokenizer,
        prompt_tokens=data.get("prompt_tokens", 128),
        max_new_tokens=data.get("max_new_tokens", 128),
        dataset=args.dataset,
    )
    write_prompts(args.prompts, prompts)
    log.info("wrote %d prompts of %s to %s", len(prompts), args.dataset, args.prompts)
    return 0
