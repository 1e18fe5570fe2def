"""Stage 1, corpora: evaluation documents (local JSON Lines or the Hugging Face hub) and prompts.

Owns: corpus names and hub locations, local-directory reading (`data.dir` / `RESISPEC_DATA_DIR`), the
paper's prompt protocol and the prompts files. Imports nothing else of resispec.
"""

from resispec.corpora.corpus import DATA_DIR_ENV, HUB, canonical_name, load_corpus, local_path
from resispec.corpora.prompts import build_prompts, read_prompts, write_prompts

__all__ = [
    "DATA_DIR_ENV",
    "HUB",
    "build_prompts",
    "canonical_name",
    "load_corpus",
    "local_path",
    "read_prompts",
    "write_prompts",
]
