"""A run's caches are sized once and its warm-up builds every compiled graph: after ``engine.warm_up``
(and the baseline's two-token warm-up) on a run's capacity, decoding prompts of several lengths, every one
of them past the old per-prompt cache size of the first, captures no new graph (dynamo's eager backend on
the CPU; the graphs counted are the ones ``torch.compile`` would compile)."""

from __future__ import annotations

import pytest
import torch

from resispec.decoding import autoregressive, trees
from resispec.decoding.engine import generate, run_capacity, warm_up

PROMPTS = [torch.arange(length) % 10 + 1 for length in (4, 21, 60)]  # per-prompt caches: 64, 64, 128
NEW_TOKENS = 12


@pytest.mark.slow  # dynamo traces a dozen graphs: about a minute on shared CPU cores
@pytest.mark.parametrize("method", ["specinfer", "resispec"])
def test_no_new_graph_after_the_warm_up(eager_backend, target_model, draft_model, method):
    tree = trees.complete(3, 2)
    capacity = run_capacity([len(p) for p in PROMPTS], NEW_TOKENS, tree)
    warm_up(target_model, draft_model, PROMPTS[-1], tree=tree, capacity=capacity, compile_mode="default")
    autoregressive.sample(
        target_model,
        PROMPTS[-1],
        max_new_tokens=2,
        generator=torch.Generator(),
        compile_mode="default",
        capacity=capacity,
    )
    graphs = eager_backend["stats"]["unique_graphs"]
    assert graphs >= 3  # the target's tree forward, the drafter's forwards, the baseline's step
    for seed, prompt in enumerate(PROMPTS):
        common = {
            "max_new_tokens": NEW_TOKENS,
            "eos_token_id": [],
            "compile_mode": "default",
            "capacity": capacity,
            "generator": torch.Generator().manual_seed(seed),
        }
        out = generate(target_model, draft_model, prompt, method=method, tree=tree, **common)
        assert len(out.tokens) == NEW_TOKENS
        autoregressive.sample(target_model, prompt, **common)
    assert eager_backend["stats"]["unique_graphs"] == graphs
