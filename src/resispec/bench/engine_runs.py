"""The systems the engine benchmark times, one prompt at a time: the autoregressive baseline (the target
alone, ``decoding.autoregressive``: the engine's static cache and compile mode), Hugging Face assisted
generation (its own eager forwards and dynamic cache: ``HF_MODE``) and the tree engine; plus its prompts
and a synthetic pair."""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, replace
from typing import NamedTuple

import torch

FALLBACK_PROMPTS = (
    "The history of the printing press begins",
    "Question: Why is the sky blue?\nAnswer:",
    "Once upon a time, in a small village by the sea,",
)


#: how Hugging Face assisted generation runs (it cannot take the engine's modes): printed beside its ratio
HF_MODE = "eager"


class Timed(NamedTuple):
    """One prompt decoded by one system: new tokens, seconds, target forwards that yield tokens (HF: the
    prefill's forward yields the first; engine: its steps) and, for the engine, seconds of every step's
    parts (``resispec.bench.overhead.PARTS``: drafting, target forward, verification, shaping, commit)
    and the overhead sums of its steps after the first (``overhead.overhead_sums``)."""

    tokens: int
    seconds: float
    forwards: int
    split: tuple[float, ...] = (0.0,) * 5
    overhead: tuple[float, float] = (0.0, 0.0)


def load_prompts(
    target_dir, count: int, tokens: int, device, *, dataset: str = "cnn_dailymail", vocab: int | None = None
) -> list:
    """The first ``count`` documents of ``dataset`` (local corpus via RESISPEC_DATA_DIR, else the hub),
    truncated to ``tokens`` tokens; the embedded fallback texts when no corpus can be read, and fixed
    pseudo-random token prompts (ids below ``vocab``) for a model saved without a tokenizer."""
    from resispec.corpora import build_prompts, load_corpus
    from resispec.models.loading import load_tokenizer

    try:
        tokenizer = load_tokenizer(target_dir)
    except (OSError, ValueError):
        generator = torch.Generator().manual_seed(0)
        top = min(100, vocab or 100)
        return [
            torch.randint(3, top, (min(tokens, 12),), generator=generator).to(device) for _ in range(count)
        ]
    try:
        rows = load_corpus(dataset, count)
    except (RuntimeError, ValueError, FileNotFoundError):
        rows = [{"id": str(i), "text": FALLBACK_PROMPTS[i % len(FALLBACK_PROMPTS)]} for i in range(count)]
    prompts = build_prompts(rows, tokenizer, prompt_tokens=tokens, max_new_tokens=1)
    return [torch.tensor(p["input_ids"], dtype=torch.long, device=device) for p in prompts]


class ForwardCounter:
    """Counts a module's forward calls (HF assisted generation's target forwards)."""

    def __init__(self, model) -> None:
        self.calls = 0
        self.handle = model.register_forward_hook(self._hook)

    def _hook(self, *_) -> None:
        self.calls += 1


def hf_generate(target, ids, *, max_new_tokens: int, temperature: float, seed: int, assistant=None) -> Timed:
    """``target.generate`` (sampling unless T = 0; assisted by ``assistant`` with its default dynamic
    schedule) on one prompt; HF samples from the global generator, so a scoped copy is seeded."""
    counter = ForwardCounter(target)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        start = time.perf_counter()
        out = target.generate(
            ids[None],
            attention_mask=torch.ones_like(ids[None]),
            max_new_tokens=max_new_tokens,
            do_sample=temperature > 0,
            temperature=temperature or None,
            top_k=None,
            top_p=None,
            assistant_model=assistant,
            pad_token_id=target.generation_config.eos_token_id,
        )
        seconds = time.perf_counter() - start
    counter.handle.remove()
    return Timed(out.shape[1] - len(ids), seconds, max(counter.calls, 1))  # the prefill yields a token


def autoregressive_generate(
    target, ids, *, max_new_tokens: int, temperature: float, seed: int, compile_mode: str | None = None
) -> Timed:
    """The autoregressive baseline on one prompt with the engine's ``compile_mode`` (None: the device's)
    and the same seed protocol as the engine (a ``torch.Generator`` on the prompt's device)."""
    from resispec.decoding.autoregressive import sample

    generator = torch.Generator(device=ids.device).manual_seed(seed)
    out = sample(
        target,
        ids,
        temperature=temperature,
        max_new_tokens=max_new_tokens,
        generator=generator,
        compile_mode=compile_mode,
    )
    return Timed(len(out.tokens), out.wall_s, max(len(out.steps), 1))


@dataclass(frozen=True)
class EngineRun:
    """One engine generation as the benchmarks (``bench engine``, ``bench gpu``) ask for it: the
    verifier ``method`` on ``tree`` at ``temperature``, ``max_new_tokens`` new tokens from a
    ``torch.Generator`` seeded with ``seed``; ``compile_mode`` / ``verify_mode``: the engine's options
    (None: its default for the device); ``stop_at_eos=False``: fixed step counts (``eos_token_id=[]``)."""

    method: str
    tree: object  # a Tree or a tree name
    temperature: float
    max_new_tokens: int
    seed: int
    compile_mode: str | None = None
    verify_mode: str | None = None
    stop_at_eos: bool = True


#: the 0-token run whose wall time is the prefill (``engine_prefill``)
PREFILL_RUN = EngineRun(method="specinfer", tree="d4b2", temperature=1.0, max_new_tokens=0, seed=0)


def engine_kwargs(generate, run: EngineRun, device: torch.device) -> dict:
    """Every keyword argument the benchmarks pass to the engine's ``generate`` for ``run`` (its generator
    on ``device``): the ONE place to wire in its new options (a cache kind, ...) after a merge.
    ``compile_mode`` / ``verify_mode`` are passed only when given and when this engine's ``generate``
    accepts them (checked with inspect.signature), so the benchmarks run on engines with and without
    them."""
    kwargs = {
        "method": run.method,
        "tree": run.tree,
        "temperature": run.temperature,
        "max_new_tokens": run.max_new_tokens,
        "generator": torch.Generator(device=device).manual_seed(run.seed),
    }
    if not run.stop_at_eos:
        kwargs["eos_token_id"] = []
    parameters = inspect.signature(generate).parameters
    for key, value in (("compile_mode", run.compile_mode), ("verify_mode", run.verify_mode)):
        if value is not None and key in parameters:
            kwargs[key] = value
    return kwargs


def compile_supported(generate=None) -> bool:
    """Whether the engine's ``generate`` takes ``compile_mode=`` (the engine's own, by default)."""
    if generate is None:
        from resispec.decoding.engine import generate
    return "compile_mode" in inspect.signature(generate).parameters


def engine_generate(target, drafter, ids, run: EngineRun, *, prefill_s: float = 0.0) -> Timed:
    """The tree engine on one prompt, with the same seed per prompt as every other system; ``prefill_s``:
    the prompt's prefill (``engine_prefill``), left out of the overhead sums."""
    from resispec.bench.overhead import PARTS, overhead_sums, steady_steps
    from resispec.decoding.engine import generate

    out = generate(target, drafter, ids, **engine_kwargs(generate, run, ids.device))
    split = tuple(sum(getattr(s, f"time_{part}_s", 0.0) for s in out.steps) for part in PARTS)
    overhead = overhead_sums(steady_steps(out, prefill_s))
    return Timed(len(out.tokens), out.wall_s, len(out.steps), split, overhead)


def engine_prefill(
    target, drafter, ids, compile_mode: str | None = None, verify_mode: str | None = None
) -> float:
    """Wall seconds of a 0-token generation of ``ids``: the prefill the engine's wall time includes."""
    from resispec.decoding.engine import generate

    run = replace(PREFILL_RUN, compile_mode=compile_mode, verify_mode=verify_mode)
    return generate(target, drafter, ids, **engine_kwargs(generate, run, ids.device)).wall_s


def synthetic_pair(root, vocab=4096, hidden=256, layers=8, draft_layers=2, seed=0) -> tuple[str, str]:
    """A random Llama target whose layers after ``draft_layers`` are damped residual updates (output
    projections scaled by 0.15, embeddings by 4) and a draft made of its first ``draft_layers`` layers:
    a cheap pair with high, not perfect, agreement, standing in for a trained pair.
    Returns (target_dir, draft_dir)."""
    from pathlib import Path

    from transformers import LlamaConfig, LlamaForCausalLM

    root = Path(root)
    target_dir, draft_dir = root / "target", root / "draft"
    if (target_dir / "config.json").is_file() and (draft_dir / "config.json").is_file():
        return str(target_dir), str(draft_dir)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=4 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=hidden // 64,
        num_key_value_heads=hidden // 64,
        max_position_embeddings=2048,
        initializer_range=0.05,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=2,
        tie_word_embeddings=True,
    )
    with torch.random.fork_rng():  # transformers initialises weights from the global generator
        torch.manual_seed(seed)
        target = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        target.model.embed_tokens.weight.mul_(4.0)  # peakier next-token distributions
        for layer in target.model.layers[draft_layers:]:
            layer.self_attn.o_proj.weight.mul_(0.15)
            layer.mlp.down_proj.weight.mul_(0.15)
    target.save_pretrained(target_dir)
    draft = LlamaForCausalLM(LlamaConfig(**{**config.to_dict(), "num_hidden_layers": draft_layers})).eval()
    state = {k: v for k, v in target.state_dict().items() if not k.startswith("model.layers.")}
    state.update({k: v for k, v in target.state_dict().items() if _layer_index(k) in range(draft_layers)})
    draft.load_state_dict(state, strict=False)
    draft.save_pretrained(draft_dir)
    return str(target_dir), str(draft_dir)


def _layer_index(key: str) -> int:
    parts = key.split(".")
    return int(parts[2]) if key.startswith("model.layers.") else -1
