"""The engine's compiled path (``generate(compile_mode=...)``): greedy output equal to Hugging Face's,
sampling unchanged, and no recompilation once every shape of a tree has been seen.

Dynamo's capture and guards are what the engine controls (fixed shapes and strides per tree level, static
buffers); the backend is swapped for ``"eager"`` here because inductor's C++ compilation of each graph
takes minutes on this machine's shared CPU cores. ``compile_mode="default"`` with inductor (CPU) produced
the same greedy tokens in a manual run (about 12 minutes of compilation for 9 graphs under load).
"""

from __future__ import annotations

import pytest
import torch

from resispec.decoding import compiled
from resispec.decoding.drafters import EagleDrafter
from resispec.decoding.engine import generate
from resispec.models.eagle_head import new_eagle_head

PROMPT = torch.tensor([1, 5, 3, 7])


@pytest.mark.slow  # dynamo traces ~10 graphs per drafter: minutes on shared CPU cores
@pytest.mark.parametrize("drafter", ["model", "eagle"])
def test_compiled_greedy_equals_hf_and_does_not_recompile(eager_backend, target_model, draft_model, drafter):
    draft = (
        draft_model
        if drafter == "model"
        else EagleDrafter(new_eagle_head(target_model, torch.Generator().manual_seed(0)).eval())
    )
    reference = target_model.generate(PROMPT[None], max_new_tokens=20, do_sample=False, eos_token_id=None)[
        0, 4:
    ]
    eager = generate(
        target_model, draft, PROMPT, tree="d3b2", temperature=0, max_new_tokens=20, eos_token_id=[]
    )
    kwargs = {
        "tree": "d3b2",
        "temperature": 0,
        "max_new_tokens": 20,
        "eos_token_id": [],
        "compile_mode": "default",
    }
    first = generate(target_model, draft, PROMPT, **kwargs)
    graphs = eager_backend["stats"]["unique_graphs"]
    assert graphs >= 2  # the tree forward and the drafter's forwards were captured
    second = generate(target_model, draft, PROMPT, **kwargs)
    assert eager_backend["stats"]["unique_graphs"] == graphs  # every shape already seen: no recompilation
    if drafter == "model":
        assert torch.equal(first.tokens, reference) and torch.equal(second.tokens, reference)
    assert torch.equal(first.tokens, eager.tokens) and torch.equal(second.tokens, eager.tokens)


@pytest.mark.slow
def test_compiled_drafter_keeps_its_graphs_for_other_prompt_lengths(eager_backend, target_model):
    """With the target as its own draft every level is accepted, so every step forwards the same shapes
    whatever the prompt: prompts of other lengths reuse the graphs (the drafter's inputs have strides
    fixed per shape, not per committed length) and still equal Hugging Face's greedy tokens."""
    kwargs = {
        "tree": "d3b2",
        "temperature": 0,
        "max_new_tokens": 12,
        "eos_token_id": [],
        "compile_mode": "default",
    }
    generate(target_model, target_model, PROMPT, **kwargs)
    graphs = eager_backend["stats"]["unique_graphs"]
    for extra in ([9], [9, 4, 2]):
        prompt = torch.cat([PROMPT, torch.tensor(extra)])
        out = generate(target_model, target_model, prompt, **kwargs)
        reference = target_model.generate(prompt[None], max_new_tokens=12, do_sample=False, eos_token_id=None)
        assert torch.equal(out.tokens, reference[0, len(prompt) :])
    assert eager_backend["stats"]["unique_graphs"] == graphs


@pytest.mark.slow
def test_compiled_sampling_matches_eager(eager_backend, target_model, draft_model):
    """Compilation changes no random draw: the same seed gives the same tokens as the eager engine."""
    outs = []
    for mode in ("none", "default"):
        generator = torch.Generator().manual_seed(4)
        outs.append(
            generate(
                target_model,
                draft_model,
                PROMPT,
                method="ers",
                tree="d3b2",
                max_new_tokens=16,
                eos_token_id=[],
                generator=generator,
                compile_mode=mode,
            ).tokens
        )
    assert torch.equal(outs[0], outs[1])


def test_modes_are_chosen_per_device_and_checked():
    assert compiled.compile_mode_for(None, torch.device("cpu")) == "none"
    assert compiled.compile_mode_for("auto", torch.device("cuda")) == "reduce-overhead"
    assert compiled.verify_mode_for(None, torch.device("cpu")) == "path"
    assert compiled.verify_mode_for(None, torch.device("cuda")) == "tree"
    with pytest.raises(ValueError, match="compile_mode must be one of"):
        compiled.compile_mode_for("fast", torch.device("cpu"))
    with pytest.raises(ValueError, match="verify_mode must be one of"):
        compiled.verify_mode_for("all", torch.device("cpu"))
