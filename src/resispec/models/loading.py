"""Loading materialized model directories: the model in eval mode on a configured device, its tokenizer."""

from __future__ import annotations

from pathlib import Path


def load_model(model_dir: str | Path, *, device: str = "cpu", dtype: str = "float32"):
    """Load a materialized model directory in eval mode on `device` with `dtype` (a config dtype name:
    float32, bfloat16, float16, or auto, resolved for `device` by `resispec.models.precision`)."""
    import torch
    from transformers import AutoModelForCausalLM

    from resispec.models.precision import resolve_dtype

    torch_dtype = getattr(torch, resolve_dtype(dtype, device))
    if not (Path(model_dir) / "config.json").is_file():
        raise ValueError(f"model_dir {model_dir}: no config.json (materialize it first)")
    from resispec.models.reduced_vocab import is_reduced, load_reduced

    if is_reduced(model_dir):  # a draft with a reduced vocabulary (q = 0 outside it)
        model = load_reduced(model_dir, torch_dtype)
    else:
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch_dtype)
    return model.to(device).eval()


def load_tokenizer(model_dir: str | Path):
    """The tokenizer saved next to a materialized model."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)


TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "tokenizer_config.json", "vocab.json")


def has_tokenizer(model_dir: str | Path) -> bool:
    """Whether a tokenizer is saved next to the model (an EAGLE head's directory has none)."""
    return any((Path(model_dir) / name).is_file() for name in TOKENIZER_FILES)


def tokenizer_mismatch(target_dir: str | Path, draft_dir: str | Path) -> str | None:
    """What differs between the tokenizers saved next to a target and a draft: None when every id both
    know is the same token in both (or either directory has no tokenizer), else both sizes and the first id
    whose token differs. Extra ids of one side alone (added special tokens) are the vocabulary check's."""
    dirs = (Path(target_dir), Path(draft_dir))
    if not all(has_tokenizer(d) for d in dirs):
        return None
    files = [d / "tokenizer.json" for d in dirs]
    if all(f.is_file() for f in files) and files[0].read_bytes() == files[1].read_bytes():
        return None  # the same file (a distilled draft saves its target's): no need to load either
    target, draft = ({i: t for t, i in load_tokenizer(d).get_vocab().items()} for d in dirs)
    differ = [i for i in target.keys() & draft.keys() if target[i] != draft[i]]
    if not differ:
        return None
    first = min(differ)
    return (
        f"the target's tokenizer ({dirs[0]}) has {len(target)} tokens, the draft's ({dirs[1]}) {len(draft)}; "
        f"token id {first} is {target[first]!r} for the target and {draft[first]!r} for the draft"
    )
