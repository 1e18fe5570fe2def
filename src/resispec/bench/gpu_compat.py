"""Running the engine on the transformers a GPU machine has, and checking that it works there.

The engine calls models with ``cache=`` (transformers >= 5.24); releases 5.0-5.23 name that argument
``past_key_values`` (a GPU image may hold one: no install step is allowed). ``adapt`` wraps such a
model so that ``cache=`` reaches it under its old name; everything else passes through. ``engine_check``
then proves the combination on the machine itself: greedy tree decoding must reproduce transformers' own
greedy generation token for token (the engine's contract, tests/decoding/test_engine_greedy.py).
"""

from __future__ import annotations

import inspect

import torch

CHECK_TOKENS = 16  # greedy tokens compared by engine_check
CHECK_TREE = "d3b2"  # a small tree with branches: the cache cut keeps a non-contiguous path


def takes_cache(model) -> bool:
    return "cache" in inspect.signature(model.forward).parameters


class CacheKeyword(torch.nn.Module):
    """``model`` with ``forward(cache=...)`` renamed to ``past_key_values=`` (transformers < 5.24); every
    other attribute (config, generation_config, output embeddings, parameters) is the model's."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.inner = model

    def forward(self, *args, cache=None, **kwargs):
        return self.inner(*args, past_key_values=cache, **kwargs)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.inner, name)


def adapt(model: torch.nn.Module) -> torch.nn.Module:
    """``model`` itself when it takes ``cache=``, else wrapped in :class:`CacheKeyword`."""
    return model if takes_cache(model) else CacheKeyword(model)


@torch.no_grad()
def engine_check(target, draft, prompt: torch.Tensor) -> dict:
    """Greedy engine tokens against ``target.generate(do_sample=False)`` on ``prompt`` [P] (the models as
    built, unadapted); ``ok`` is True when they are equal (an engine that raises fails, with ``error``)."""
    from resispec.decoding.engine import generate

    ids = prompt[None]
    reference = target.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=CHECK_TOKENS,
                                do_sample=False, temperature=None, top_p=None, top_k=None,
                                pad_token_id=0)[0, len(prompt):]  # fmt: skip  # stops after an EOS
    hf = reference.tolist()
    check = {"ok": False, "engine": None, "transformers": hf, "tree": CHECK_TREE,
             "cache_keyword": "cache" if takes_cache(target) else "past_key_values (adapted)"}  # fmt: skip
    try:
        out = generate(adapt(target), adapt(draft), prompt, method="specinfer", tree=CHECK_TREE,
                       temperature=0.0, max_new_tokens=CHECK_TOKENS, eos_token_id=[])  # fmt: skip
    except Exception as error:  # noqa: BLE001 - any failure of the engine here is the finding
        return check | {"error": f"{type(error).__name__}: {error}"}
    check["engine"] = out.tokens.tolist()[: len(hf)]
    check["ok"] = check["engine"] == hf and len(hf) > 0
    return check
