"""`tiny:` model source: a randomly initialised tiny Llama with a byte-level tokenizer, built offline
in a second. For tests and the `.test` workflow; spec `tiny:layers=2,hidden=64,seed=1`."""

from __future__ import annotations

from pathlib import Path

DEFAULTS = {"layers": 2, "hidden": 64, "heads": 4, "seed": 0}
SPECIALS = ["<|endoftext|>", "<|pad|>"]


def parse_spec(spec: str) -> dict[str, int]:
    options = dict(DEFAULTS)
    for part in filter(None, spec.split(",")):
        key, _, value = part.partition("=")
        if key not in DEFAULTS or not value.isdigit():
            raise ValueError(f"tiny model spec {spec!r}: bad option {part!r} (known: {sorted(DEFAULTS)})")
        options[key] = int(value)
    return options


def byte_tokenizer():
    """A byte-level BPE tokenizer without merges: 256 byte tokens + end-of-text and padding."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {symbol: i for i, symbol in enumerate(sorted(alphabet))}
    vocab.update({token: len(vocab) + i for i, token in enumerate(SPECIALS)})
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token=SPECIALS[0], pad_token=SPECIALS[1])


def build(spec: str, dest: str | Path) -> Path:
    """Write a tiny random Llama and its tokenizer to `dest`."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    options = parse_spec(spec)
    tokenizer = byte_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=options["hidden"],
        intermediate_size=2 * options["hidden"],
        num_hidden_layers=options["layers"],
        num_attention_heads=options["heads"],
        num_key_value_heads=options["heads"],
        max_position_embeddings=1024,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    generator = torch.Generator().manual_seed(options["seed"])  # weights: a pure function of the spec
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.fill_(1.0)
            else:
                param.normal_(0.0, 0.5 if "embed" in name else 0.1, generator=generator)
    dest = Path(dest)
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)
    return dest
