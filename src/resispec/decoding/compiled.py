"""Engine options chosen per device, and the per-model state kept between generations.

``compile_mode`` (``generate(compile_mode=...)``, config key ``compile``): ``"none"`` runs the models
eagerly; any other value is a ``torch.compile`` mode applied to the target's tree forward and the
drafter's per-level forwards (fixed shapes: one graph per tree level), e.g. ``"default"``,
``"reduce-overhead"`` (CUDA graphs on CUDA), ``"max-autotune"``; ``"auto"`` (or None) picks
``AUTO_COMPILE`` for the device type. Prefills (prompt-sized) always run eagerly.

``verify_mode`` (``generate(verify_mode=...)``): ``"tree"`` verifies every node of the tree in one
batched call (all target rows projected; the planning of ``ers`` / ``optimal`` batched over the nodes),
``"path"`` verifies level by level the node the walk stands on (one projected row per level, far less
vocabulary work on a CPU); both without a host synchronisation. ``"auto"`` picks ``AUTO_VERIFY``.

Static caches and compiled forwards are kept per model (weakly) and reused by later generations with a
capacity that fits, so CUDA graphs see the same buffers every time.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch

from resispec.decoding.static_cache import StaticKV

__all__ = [
    "COMPILE_MODES",
    "VERIFY_MODES",
    "compile_mode_for",
    "verify_mode_for",
    "EngineModes",
    "static_cache",
    "maybe_compile",
    "decided_once",
]

COMPILE_MODES = ("auto", "none", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
VERIFY_MODES = ("auto", "tree", "path")
# CPU: eager (inductor's CPU code barely beats eager here and compiling costs minutes per tree shape);
# CUDA: CUDA graphs, since a tree step's dozens of small kernels are launch-bound.
AUTO_COMPILE = {"cuda": "reduce-overhead"}
AUTO_VERIFY = {"cuda": "tree"}
CAPACITY_QUANTUM = 64  # static caches are sized in multiples of this, so later prompts reuse them

_STATE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _choose(name: str, mode: str | None, known: tuple, auto: dict, device: torch.device, fallback: str):
    if mode is None or mode == "auto":
        return auto.get(torch.device(device).type, fallback)
    if mode not in known:
        raise ValueError(f"{name} must be one of {known}, got {mode!r}")
    return mode


def compile_mode_for(mode: str | None, device: torch.device) -> str:
    """The compile mode to use on ``device`` (``None`` / ``"auto"``: AUTO_COMPILE, else ``"none"``)."""
    return _choose("compile_mode", mode, COMPILE_MODES, AUTO_COMPILE, device, "none")


def verify_mode_for(mode: str | None, device: torch.device) -> str:
    """The verification mode to use on ``device`` (``None`` / ``"auto"``: AUTO_VERIFY, else ``"path"``)."""
    return _choose("verify_mode", mode, VERIFY_MODES, AUTO_VERIFY, device, "path")


@dataclass(frozen=True)
class EngineModes:
    """The engine's ``compile_mode`` and ``verify_mode`` as a run asks for them (None / ``"auto"``: the
    device's choice), travelling together to whatever times the engine."""

    compile_mode: str | None = None
    verify_mode: str | None = None

    def on(self, device: torch.device) -> dict[str, str]:
        """Both modes resolved for ``device``: ``{"compile_mode": ..., "verify_mode": ...}``."""
        return {
            "compile_mode": compile_mode_for(self.compile_mode, device),
            "verify_mode": verify_mode_for(self.verify_mode, device),
        }


def _state(model) -> dict:
    if model not in _STATE:
        _STATE[model] = {}
    return _STATE[model]


def decided_once(model, name: str, decide=None):
    """The model's ``name`` decision: ``decide()`` on the first call, kept for the model's later calls
    (e.g. the head check: a flip from one prompt to the next would recompile the compiled forwards);
    ``decide=None`` only reads it (None while undecided)."""
    state = _state(model)
    if ("decided", name) not in state:
        if decide is None:
            return None
        state[("decided", name)] = decide()
    return state[("decided", name)]


def num_layers(model) -> int:
    """Decoder layers of a Hugging Face model (its config's ``num_hidden_layers``)."""
    config = getattr(model, "config", None)
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None)
    if not layers:
        raise ValueError(f"{type(model).__name__}: its config names no num_hidden_layers")
    return int(layers)


def static_cache(model, role: str, capacity: int, layers: int | None = None) -> StaticKV:
    """The model's static cache for ``role`` ("target", "draft", "eagle"), reused when it holds
    ``capacity``; ``layers`` defaults to the model's decoder layers."""
    layers = num_layers(model) if layers is None else layers
    state = _state(model)
    cache = state.get(("cache", role))
    if cache is None or cache.capacity < capacity or cache.num_layers != layers:
        size = -(-capacity // CAPACITY_QUANTUM) * CAPACITY_QUANTUM
        cache = state[("cache", role)] = StaticKV(size, layers)
    cache.length = 0
    return cache


RECOMPILE_LIMIT = 64  # graphs per forward function: one per tree level and pending length, per tree


def _compile(fn, mode: str):
    """``torch.compile`` with fixed shapes (a graph per shape; the engine's shapes are few)."""
    import torch._dynamo

    config = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):
        if getattr(config, name, RECOMPILE_LIMIT) < RECOMPILE_LIMIT:
            setattr(config, name, RECOMPILE_LIMIT)
    return torch.compile(fn, mode=mode, dynamic=False, fullgraph=False)


def maybe_compile(model, key: tuple, fn, mode: str):
    """``fn`` itself for mode "none", else its ``torch.compile`` (kept per model and ``key``). Inputs
    must have fixed shapes and strides per key (the callers pass fresh or fixed buffers)."""
    if mode == "none":
        return fn
    state = _state(model)
    if ("compiled", key, mode) not in state:
        compiled = _compile(fn, mode)

        def call(*args):
            if torch.compiler.is_compiling():
                return fn(*args)
            if hasattr(torch.compiler, "cudagraph_mark_step_begin"):
                torch.compiler.cudagraph_mark_step_begin()
            return compiled(*args)

        state[("compiled", key, mode)] = call
    return state[("compiled", key, mode)]
