"""Plain autoregressive sampling from the target alone: the baseline method ``autoregressive`` of every
decoding run (same prompts, same temperature processing, same ``torch.Generator`` protocol).

One target forward per token on top of a KV cache (the prompt is prefilled once); each token is drawn
from ``process_logits(logits, T)`` by the verifiers' inverse-CDF ``draw`` (one uniform per token;
argmax at T = 0). The result is a :class:`GenerateOutput` whose steps each commit one token, so its
records have the raw-record format of tree decoding (accepted length 1, no drafted positions).
"""

from __future__ import annotations

import time

import torch

from resispec.decoding.drafters import process_logits
from resispec.decoding.kv_cache import cache_kwargs
from resispec.decoding.records import GenerateOutput, StepRecord
from resispec.decoding.target import sync
from resispec.decoding.tree_attention import model_device

__all__ = ["METHOD", "sample", "eos_ids"]

METHOD = "autoregressive"


def eos_ids(target_model, eos_token_id) -> set[int]:
    """EOS ids: ``eos_token_id`` (an int or a list; ``[]`` disables stopping), else the model's
    generation config."""
    if eos_token_id is None:
        config = getattr(target_model, "generation_config", None)
        eos_token_id = getattr(config, "eos_token_id", None)
    if eos_token_id is None:
        return set()
    return {int(eos_token_id)} if isinstance(eos_token_id, int) else {int(t) for t in eos_token_id}


def _next_token(logits: torch.Tensor, temperature: float, generator: torch.Generator) -> int:
    """One token from the last position's logits [V]."""
    from resispec.verify.samplers import draw

    if temperature == 0:
        return int(torch.argmax(logits))
    probs = process_logits(logits, temperature)  # [V]
    return draw(probs, generator, probs)


@torch.no_grad()
def sample(
    target_model: torch.nn.Module,
    input_ids: torch.Tensor,
    *,
    temperature: float = 1.0,
    max_new_tokens: int = 64,
    generator: torch.Generator,
    eos_token_id: int | list[int] | None = None,
) -> GenerateOutput:
    """Sample up to ``max_new_tokens`` tokens after ``input_ids`` (long [L] or [1, L]) from the target.

    Step records time the target forward (``time_target_s``) and the draw (``time_verify_s``).
    """
    from transformers import DynamicCache

    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens!r}")
    device = model_device(target_model)
    prompt = input_ids.reshape(-1).to(device)  # [L]
    if len(prompt) == 0:
        raise ValueError(f"input_ids must hold one non-empty sequence, got shape {tuple(input_ids.shape)}")
    eos, cache = eos_ids(target_model, eos_token_id), DynamicCache(config=target_model.config)
    start = time.perf_counter()
    step_input, tokens, steps = prompt[None], [], []
    keyword = cache_kwargs(target_model, cache)
    while len(tokens) < max_new_tokens:
        t0 = time.perf_counter()
        logits = target_model(input_ids=step_input, **keyword, use_cache=True, logits_to_keep=1).logits
        sync(device)
        t1 = time.perf_counter()
        token = _next_token(logits[0, -1], temperature, generator)
        tokens.append(token)
        steps.append(
            StepRecord(1, [], [], [], [], time_target_s=t1 - t0, time_verify_s=time.perf_counter() - t1)
        )
        if token in eos:
            break
        step_input = torch.tensor([[token]], dtype=torch.long, device=device)
    sync(device)
    wall = time.perf_counter() - start
    new_tokens = torch.tensor(tokens, dtype=torch.long, device=device)
    return GenerateOutput(new_tokens, steps, wall_s=wall, prompt_len=len(prompt))
