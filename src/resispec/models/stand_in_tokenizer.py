"""The rehearsal's Llama-family tokenizer: a real SentencePiece BPE model of Llama-2's kind (byte
fallback, digits split, `<unk>` = 0, `<s>` = 1, `</s>` = 2, 32000 pieces), trained on the local corpus
samples, cached by the digest of its training text and options, and written in a repository's published
tokenizer files (`tokenizer.model`, `tokenizer.json`, `tokenizer_config.json`, `special_tokens_map.json`).

The trainer options mirror the `trainer_spec` stored inside Llama-2's `tokenizer.model`; the vocabulary
is of course not Llama's (a stand-in needs its kind and size, not its merges).
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

VOCAB_SIZE = 32000
TRAINER = {
    "model_type": "bpe",
    "byte_fallback": True,
    "split_digits": True,
    "unk_id": 0,
    "bos_id": 1,
    "eos_id": 2,
    "pad_id": -1,
    "character_coverage": 0.99995,
    "allow_whitespace_only_pieces": True,
    "remove_extra_whitespaces": False,
    "normalization_rule_name": "identity",
    "max_sentence_length": 1 << 20,
}
SPECIAL_TOKENS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}


def tokenizer_model(texts: list[str], cache_dir: str | Path, *, vocab_size: int = VOCAB_SIZE) -> Path:
    """The trained `tokenizer.model` for `texts` (trained once per text and options, then cached)."""
    import sentencepiece

    digest = hashlib.sha256(json.dumps([TRAINER, vocab_size, texts]).encode()).hexdigest()[:16]
    path = Path(cache_dir) / "tokenizers" / f"llama-bpe-{vocab_size}-{digest}" / "tokenizer.model"
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
        log.info("training a %d-piece SentencePiece BPE tokenizer on %d documents", vocab_size, len(texts))
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(texts),
            model_prefix=str(Path(tmp) / "spm"),
            vocab_size=vocab_size,
            num_threads=1,  # deterministic
            minloglevel=2,
            **TRAINER,
        )
        (Path(tmp) / "spm.model").replace(path)
    return path


def write_tokenizer(
    dest: str | Path, model_file: Path, tokenizer_config: dict, files: tuple[str, ...]
) -> None:
    """Write a repository's tokenizer files into `dest`: `tokenizer_config.json` and
    `special_tokens_map.json` from the published keys, plus those of `tokenizer.model` / `tokenizer.json`
    that the repository ships (`files`)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2) + "\n")
    special = {key: tokenizer_config.get(key, value) for key, value in SPECIAL_TOKENS.items()}
    (dest / "special_tokens_map.json").write_text(json.dumps(special, indent=2) + "\n")
    if "tokenizer.model" in files:
        shutil.copyfile(model_file, dest / "tokenizer.model")
    if "tokenizer.json" in files:
        (dest / "tokenizer.json").write_text(fast_tokenizer_json(model_file, tokenizer_config))


def fast_tokenizer_json(model_file: Path, tokenizer_config: dict) -> str:
    """`tokenizer.json` converted from the SentencePiece model by transformers (as the hub's files were)."""
    from transformers import AutoTokenizer

    with tempfile.TemporaryDirectory() as tmp:
        shutil.copyfile(model_file, Path(tmp) / "tokenizer.model")
        (Path(tmp) / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
        AutoTokenizer.from_pretrained(tmp).save_pretrained(Path(tmp) / "saved")
        return (Path(tmp) / "saved" / "tokenizer.json").read_text()
