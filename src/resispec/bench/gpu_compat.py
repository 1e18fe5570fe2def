"""Checking that the engine works with the transformers a GPU machine has.

The engine hands its cache by the keyword the model's forward takes (``cache=`` from transformers 5.24,
``past_key_values=`` in 5.0-5.23, which a GPU image may hold: no install step is allowed;
``resispec.decoding.kv_cache.cache_kwargs``). ``engine_check`` proves the combination on the machine
itself: greedy tree decoding must reproduce transformers' own greedy generation token for token (the
engine's contract, tests/decoding/test_engine_greedy.py).
"""

from __future__ import annotations

import torch

CHECK_TOKENS = 16  # greedy tokens compared by engine_check
CHECK_TREE = "d3b2"  # a small tree with branches: the cache cut keeps a non-contiguous path


@torch.no_grad()
def engine_check(target, draft, prompt: torch.Tensor, compile_mode: str | None = "none") -> dict:
    """Greedy engine tokens against ``target.generate(do_sample=False)`` on ``prompt`` [P], the engine run
    with ``compile_mode`` (the pass's own: the check tests the engine the pass times); ``ok`` is True when
    they are equal (an engine that raises fails, with ``error``)."""
    from resispec.decoding.compiled import compile_mode_for
    from resispec.decoding.engine import generate
    from resispec.decoding.kv_cache import cache_kwargs

    ids = prompt[None]
    reference = target.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=CHECK_TOKENS,
        do_sample=False,
        temperature=None,
        top_p=None,
        top_k=None,
        pad_token_id=0,
    )[0, len(prompt) :]  # stops after an EOS
    hf = reference.tolist()
    check = {
        "ok": False,
        "engine": None,
        "transformers": hf,
        "tree": CHECK_TREE,
        "cache_keyword": next(iter(cache_kwargs(target, None))),
        "compile_mode": compile_mode_for(compile_mode, prompt.device),
    }
    try:
        out = generate(
            target,
            draft,
            prompt,
            method="specinfer",
            tree=CHECK_TREE,
            temperature=0.0,
            max_new_tokens=CHECK_TOKENS,
            eos_token_id=[],
            compile_mode=compile_mode,
        )
    except Exception as error:  # noqa: BLE001 - any failure of the engine here is the finding
        return check | {"error": f"{type(error).__name__}: {error}"}
    check["engine"] = out.tokens.tolist()[: len(hf)]
    check["ok"] = check["engine"] == hf and len(hf) > 0
    return check
