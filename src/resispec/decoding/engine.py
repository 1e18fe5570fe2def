"""Tree speculative decoding on Hugging Face causal LMs (batch size 1).

Each step: the drafter proposes a tree rooted at the last committed token; the target runs one forward
over all tree nodes (4-D tree mask + position ids on top of its committed-prefix KV cache); the verifier
walks the tree from the root, descending into accepted children, and ends the step with one residual
or bonus token (vocabulary in `resispec.decoding.walk`); both caches are then cut to the accepted path.
"""

from __future__ import annotations

import time

import torch

from resispec.decoding.arguments import generate_arguments
from resispec.decoding.autoregressive import eos_ids
from resispec.decoding.drafters import Drafter, ModelDrafter
from resispec.decoding.kv_cache import cache_length
from resispec.decoding.records import GenerateOutput, StepRecord
from resispec.decoding.target import new_target, sync
from resispec.decoding.tree_attention import model_device
from resispec.decoding.trees import Tree
from resispec.decoding.walk import walk

__all__ = ["generate", "GenerateOutput", "StepRecord"]


def _as_drafter(draft) -> Drafter:
    if isinstance(draft, Drafter):
        return draft
    if isinstance(draft, torch.nn.Module):
        return ModelDrafter(draft)
    raise ValueError(f"draft must be a Hugging Face model or a Drafter, got {type(draft).__name__}")


def _truncate(new: list[int], produced: int, max_new_tokens: int, eos: set[int]) -> tuple[list[int], bool]:
    """Cut a step's tokens at the first EOS or at max_new_tokens; returns (tokens, finished)."""
    room = max_new_tokens - produced
    for i, tok in enumerate(new[:room]):
        if tok in eos:
            return new[: i + 1], True
    return new[:room], len(new) >= room


def _verifier(method: str, temperature: float, options: dict | None):
    """The node sampler: inputs are checked at the API boundary (``generate``'s arguments); inside the
    loop it sees probabilities the engine computed itself, so its per-call checks (0.6 ms a node on the
    CPU) are off unless ``options`` ask for them (``{"validate": True}``)."""
    from resispec.verify import get_verifier

    return get_verifier("greedy" if temperature == 0 else method, **{"validate": False, **(options or {})})


@torch.no_grad()
def generate(
    target_model: torch.nn.Module,
    draft,
    input_ids: torch.Tensor,
    *,
    method: str = "specinfer",
    tree: Tree | str = "d4b2",
    temperature: float = 1.0,
    max_new_tokens: int = 64,
    generator: torch.Generator | None = None,
    eos_token_id: int | list[int] | None = None,
    audit_top: int | None = None,
    verifier_options: dict | None = None,
) -> GenerateOutput:
    """Speculative tree decoding of one prompt.

    input_ids: long [L] or [1, L]. draft: a Hugging Face causal LM or a :class:`Drafter`. At
    ``temperature == 0`` the ``greedy`` verifier is used whatever ``method`` says; ``verifier_options``
    go to ``get_verifier`` (``{"validate": True}`` re-enables its per-node input checks). ``eos_token_id``
    defaults to the target's generation config; pass ``[]`` to disable EOS stopping. ``audit_top=N``
    stores each verified node's (target, draft) distributions truncated to the top-N tokens.
    """
    device = model_device(target_model)
    prompt, tree, temperature, max_new_tokens = generate_arguments(
        target_model, input_ids, tree, temperature, max_new_tokens, device
    )
    if generator is None:
        generator = torch.Generator(device=device)
        generator.seed()
    verifier = _verifier(method, temperature, verifier_options)
    drafter = _as_drafter(draft)
    drafter.reset()
    target = new_target(target_model, tree, device, drafter.needs_target_features, temperature)
    start = time.perf_counter()
    drafter.update(prompt, (), target.prefill(prompt))
    committed, new_tokens, steps = prompt, [], []
    eos = eos_ids(target_model, eos_token_id)
    finished = max_new_tokens == 0
    while not finished:
        step, tokens = _step(target, drafter, verifier, committed, tree, temperature, generator, audit_top)
        tokens, finished = _truncate(tokens, len(new_tokens), max_new_tokens, eos)
        step.accepted_length = len(tokens)
        new_tokens.extend(tokens)
        committed = torch.cat([committed, torch.tensor(tokens, dtype=torch.long, device=device)])
        steps.append(step)
    sync(device)
    wall = time.perf_counter() - start
    return GenerateOutput(
        torch.tensor(new_tokens, dtype=torch.long, device=device), steps, wall_s=wall, prompt_len=len(prompt)
    )


def _step(target, drafter, verifier, committed, tree, temperature, generator, audit_top):
    """One draft / verify / commit step; returns its record and the step's tokens (untruncated):
    the accepted tokens followed by the residual or bonus token."""
    device = committed.device
    t0 = time.perf_counter()
    draft = drafter.propose(
        committed, tree, draws=verifier.draws, temperature=temperature, generator=generator
    )
    sync(device)
    t1 = time.perf_counter()
    prefix_len = cache_length(target.cache)
    target_probs, features = target.verify_forward(draft.tokens)  # lazily [N] x [V]
    sync(device)
    t2 = time.perf_counter()
    result = walk(draft, target_probs, verifier, generator, audit_top)
    path = result.accepted_nodes
    tokens = [int(t) for t in draft.tokens[path].tolist()] + [result.final_token]
    sync(device)
    t_walk = time.perf_counter()
    target.keep_path(path, prefix_len)
    new_committed = torch.cat([committed, torch.tensor(tokens, dtype=torch.long, device=device)])
    drafter.update(new_committed, path, None if features is None else features[[0, *path]])
    sync(device)
    t3 = time.perf_counter()
    projection = target_probs.seconds  # lazy vocabulary projections done during the walk
    shaping = sum(result.shaping_time_s.values())
    record = StepRecord(
        len(tokens), result.position_tried, result.position_accepted, result.depth_tried,
        result.depth_accepted, time_draft_s=t1 - t0, time_target_s=t2 - t1 + projection,
        time_verify_s=t_walk - t2 - projection - shaping, time_shaping_s=shaping, time_commit_s=t3 - t_walk,
    )  # fmt: skip
    record.audit, record.shaping_time_s = result.audit, result.shaping_time_s
    return record, tokens
