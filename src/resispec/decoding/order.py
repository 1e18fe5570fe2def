"""The order and seeds of a decoding pass: each method's warm-up first (``warm_up_prompt``), then every
method of a run decodes a prompt from one seed (made from the base seed, the run's configuration and the
prompt id), and the methods take turns per prompt."""

from __future__ import annotations

import hashlib

__all__ = ["SEED_KEYS", "WARMUP_NEW_TOKENS", "interleaved", "prompt_seed", "warm_up_prompt"]

SEED_KEYS = ("target", "draft", "dataset", "temperature", "tree")  # a baseline's job has no draft and no tree
# The warm-up: ``DecodeSession.prepare`` sizes the caches and builds the graphs; what one-off costs remain
# (the verifier's first calls, lazy kernels) fall in a method's first steps, which a few tokens of the first
# prompt per method cover (`python -m resispec.bench warm_up`; docs/reproduction-notes.md, "The default
# run's hour").
WARMUP_NEW_TOKENS = 4


def prompt_seed(base: int, job: dict, prompt_id: str) -> int:
    """A 63-bit seed from the base seed, the run's configuration and the prompt id (every method of the
    run decodes the prompt from this seed; a baseline's configuration has no draft and no tree)."""
    keys = [str(base)] + [str(job[k]) for k in SEED_KEYS if k in job]
    digest = hashlib.sha256("|".join(keys + [prompt_id]).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def interleaved(
    methods: list[str], prompts: list[dict], done: set[tuple[str, str]]
) -> list[tuple[str, dict]]:
    """(method, prompt) pairs still to do, prompt by prompt; prompt i starts with method i mod M."""
    order = []
    for index, prompt in enumerate(prompts):
        shift = index % len(methods)
        for method in methods[shift:] + methods[:shift]:
            if (method, prompt["prompt_id"]) not in done:
                order.append((method, prompt))
    return order


def warm_up_prompt(prompt: dict) -> dict:
    """The warm-up's prompt: ``prompt`` with a budget of at most ``WARMUP_NEW_TOKENS`` new tokens."""
    return dict(prompt, max_new_tokens=min(WARMUP_NEW_TOKENS, int(prompt["max_new_tokens"])))
