"""Loading materialized model directories: the model in eval mode on a configured device, its tokenizer."""

from __future__ import annotations

from pathlib import Path


def load_model(model_dir: str | Path, *, device: str = "cpu", dtype: str = "float32"):
    """Load a materialized model directory in eval mode on `device` with `dtype` (a torch dtype name)."""
    import torch
    from transformers import AutoModelForCausalLM

    torch_dtype = getattr(torch, dtype, None)
    if not isinstance(torch_dtype, torch.dtype):
        raise ValueError(f"dtype {dtype!r} is not a torch dtype name")
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
