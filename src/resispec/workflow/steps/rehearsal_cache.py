"""`resispec rehearsal-cache OUT_DIR`: a Hugging Face cache of stand-ins for every hub model a config uses.

    resispec rehearsal-cache /tmp/rehearsal --configfile config/paper.yaml
    HF_HOME=/tmp/rehearsal HF_HUB_OFFLINE=1 snakemake --cores 2 \\
        --configfile config/paper.yaml config/paper-rehearsal.yaml

OUT_DIR becomes an `HF_HOME` (the cache is `OUT_DIR/hub`). Every `hf:` model that a decoding run of the
config uses (targets, drafts, EAGLE heads) gets a stand-in (`resispec.models.stand_ins`): the published
files and config keys, small random weights, and a SentencePiece tokenizer trained once on the local
corpus samples (`data.dir` or $RESISPEC_DATA_DIR) and cached under $RESISPEC_CACHE_DIR.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from resispec.workflow.cli_types import existing_file, nonnegative_int

HELP = "fill a Hugging Face cache with small stand-ins of every hub model a config uses (dress rehearsal)"
BASE_CONFIG = "config/config.yaml"  # the Snakefile's own configfile, under every --configfile
TOKENIZER_DOCUMENTS = 2000  # documents per corpus the stand-in tokenizer is trained on (at most)
log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    parser.add_argument("out_dir", help="directory to use as HF_HOME (the hub cache is OUT_DIR/hub)")
    parser.add_argument(
        "--configfile",
        nargs="+",
        type=existing_file,
        help="config files merged in order, as for snakemake (default: config/paper.yaml)",
    )
    parser.add_argument(
        "--seed", type=nonnegative_int, default=0, help="seed of the stand-ins' random weights"
    )


def used_models(config: dict) -> dict:
    """The config's models that some decoding run uses, with the targets of EAGLE heads."""
    from resispec.workflow.sheets import expand_jobs, group_runs

    runs = group_runs(expand_jobs(config))
    names = {run[key] for run in runs.values() for key in ("target", "draft")}
    names |= {config["models"][n]["head_of"] for n in list(names) if config["models"][n].get("head_of")}
    return {name: config["models"][name] for name in sorted(names)}


def corpus_texts(data: dict) -> list[str]:
    from resispec.corpora import load_corpus

    texts = []
    for name in data.get("datasets", []):
        texts += [row["text"] for row in load_corpus(name, TOKENIZER_DOCUMENTS, data_dir=data.get("dir"))]
    return texts


def run(args) -> int:
    from resispec.models.sources import CACHE_ENV, default_cache
    from resispec.models.stand_ins import build_rehearsal_cache
    from resispec.workflow.config import load_configs

    files = [BASE_CONFIG] if Path(BASE_CONFIG).is_file() else []
    config = load_configs(files + (args.configfile or ["config/paper.yaml"]))
    out = Path(args.out_dir).resolve()
    cache = os.environ.get(CACHE_ENV) or default_cache()
    snapshots = build_rehearsal_cache(
        used_models(config), out / "hub", corpus_texts(config["data"]), cache_dir=cache, seed=args.seed
    )
    for repo, snapshot in snapshots.items():
        print(f"{repo}: {snapshot}")
    print(f"export HF_HOME={out} HF_HUB_OFFLINE=1")
    return 0
