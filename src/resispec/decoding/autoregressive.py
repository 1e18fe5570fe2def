"""Plain autoregressive sampling from the target alone: the baseline method ``autoregressive`` of every
decoding run (same prompts, same temperature processing, same ``torch.Generator`` protocol).

One target forward per token on top of the same static KV cache as tree decoding (the model's
``"target"`` cache of ``decoding.compiled``, the prompt prefilled once, eagerly) and with the same
``compile_mode`` (the one-token forward compiled as the engine's tree forward is, e.g. with CUDA graphs on
CUDA under ``"auto"``), so that a speedup over it measures speculation, not the engine's settings. Each
token is drawn from ``process_logits(logits, T)`` by the verifiers' inverse-CDF ``draw`` (one uniform
per token; argmax at T = 0). The result is a :class:`GenerateOutput` whose steps each commit one token,
so its records have the raw-record format of tree decoding (accepted length 1, no drafted positions);
it names its compile mode and verify mode ``"none"`` (nothing is verified).
"""

from __future__ import annotations

import time

import torch

from resispec.decoding.compiled import compile_mode_for, maybe_compile, static_cache
from resispec.decoding.drafters import process_logits
from resispec.decoding.kv_cache import cached_forward
from resispec.decoding.records import GenerateOutput, StepRecord
from resispec.decoding.static_cache import FixedMask, causal_mask
from resispec.decoding.target import sync
from resispec.decoding.tree_attention import model_device, model_dtype

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


def _token_step(model, cache):
    """The one-token forward over ``cache``: (input_ids [1, 1], position_ids [1, 1], mask [1, 1, 1, C])
    -> logits [V] (fixed shapes: one graph when compiled)."""
    forward = cached_forward(model, cache, logits_to_keep=1)

    def step(input_ids, position_ids, mask):
        return forward(input_ids, position_ids, mask).logits[0, -1]

    return step


def _prefill(model, cache, prompt: torch.Tensor, dtype) -> torch.Tensor:
    """The prompt's eager forward into ``cache``; returns the last position's logits [V]."""
    cache.write = torch.arange(len(prompt), device=prompt.device)
    mask = causal_mask(0, len(prompt), cache.capacity, dtype, prompt.device)
    out = cached_forward(model, cache, logits_to_keep=1)(prompt[None], cache.write[None], mask)
    cache.length = len(prompt)
    return out.logits[0, -1]


def _prompt(input_ids: torch.Tensor, max_new_tokens: int, device: torch.device) -> torch.Tensor:
    """``input_ids`` (long [L] or [1, L]) as one prompt [L] on ``device``; ValueError for a negative
    ``max_new_tokens`` or an empty prompt."""
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens!r}")
    prompt = input_ids.reshape(-1).to(device)  # [L]
    if len(prompt) == 0:
        raise ValueError(f"input_ids must hold one non-empty sequence, got shape {tuple(input_ids.shape)}")
    return prompt


@torch.no_grad()
def sample(
    target_model: torch.nn.Module,
    input_ids: torch.Tensor,
    *,
    temperature: float = 1.0,
    max_new_tokens: int = 64,
    generator: torch.Generator,
    eos_token_id: int | list[int] | None = None,
    compile_mode: str | None = None,
    capacity: int | None = None,
) -> GenerateOutput:
    """Sample up to ``max_new_tokens`` tokens after ``input_ids`` (long [L] or [1, L]) from the target.

    ``compile_mode`` as ``generate``'s (None / "auto": chosen for the device); ``capacity``: the static
    cache's size (default the prompt plus ``max_new_tokens``; a run passes its longest). Step records time
    the target forward (``time_target_s``) and the draw (``time_verify_s``).
    """
    device = model_device(target_model)
    prompt = _prompt(input_ids, max_new_tokens, device)  # [L]
    compile_mode = compile_mode_for(compile_mode, device)
    needed = len(prompt) + max_new_tokens
    cache = static_cache(target_model, "target", max(needed, capacity or 0))
    dtype, eos = model_dtype(target_model), eos_ids(target_model, eos_token_id)
    step = maybe_compile(
        target_model, ("autoregressive", id(cache)), _token_step(target_model, cache), compile_mode
    )
    mask = FixedMask(torch.ones(1, 1, dtype=torch.bool, device=device), cache.capacity, dtype)
    step_input = torch.empty(1, 1, dtype=torch.long, device=device)
    slot = torch.empty(1, dtype=torch.long, device=device)  # the new token's slot and position
    start = time.perf_counter()
    tokens, steps = [], []
    logits = _prefill(target_model, cache, prompt, dtype) if max_new_tokens else None
    t0 = start  # the first token's forward is the prefill
    while len(tokens) < max_new_tokens:
        t1 = time.perf_counter()
        token = _next_token(logits, temperature, generator)
        tokens.append(token)
        steps.append(
            StepRecord(1, [], [], [], [], time_target_s=t1 - t0, time_verify_s=time.perf_counter() - t1)
        )
        if token in eos or len(tokens) == max_new_tokens:
            break
        t0 = time.perf_counter()
        step_input.fill_(token)
        slot.fill_(cache.length)
        cache.write = slot
        logits = step(step_input, slot[None], mask.at(cache.length))
        cache.length += 1
        sync(device)
    sync(device)
    wall = time.perf_counter() - start
    new_tokens = torch.tensor(tokens, dtype=torch.long, device=device)
    return GenerateOutput(
        new_tokens, steps, wall_s=wall, prompt_len=len(prompt), compile_mode=compile_mode, verify_mode="none"
    )
