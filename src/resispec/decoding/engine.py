"""Tree speculative decoding on Hugging Face causal LMs (batch size 1).

Each step: the drafter proposes a tree rooted at the last committed token; the target runs one forward
over all tree nodes (4-D tree mask + position ids on top of its committed-prefix KV cache); the verifier
walks the tree from the root, descending into accepted children, and ends the step with one residual
or bonus token (vocabulary in `resispec.decoding.walk`); both caches are then cut to the accepted path.
"""

from __future__ import annotations

import time

import torch

from resispec.decoding.arguments import generate_arguments, pair_vocabularies
from resispec.decoding.autoregressive import eos_ids
from resispec.decoding.compiled import compile_mode_for, verify_mode_for
from resispec.decoding.drafters import AcceptedNodes, Drafter, ModelDrafter
from resispec.decoding.phase_timer import PhaseTimer
from resispec.decoding.records import GenerateOutput, StepRecord
from resispec.decoding.target import new_target, sync
from resispec.decoding.tree_attention import model_device
from resispec.decoding.trees import Tree
from resispec.decoding.walk import WalkContext, counts, finish_audit

__all__ = ["generate", "warm_up", "run_capacity", "GenerateOutput", "StepRecord"]

SHAPING_KEYS = ("budgeting", "redistribution", "proxy")


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
    """The method's sampler (its ``method``, ``draws``, ``options``; the engine verifies with the batched
    ``verify.batched.verify_rows``): inside the loop the rows are probabilities the engine computed itself,
    so their checks (host reads) are off unless ``options`` ask for them (``{"validate": True}``)."""
    from resispec.verify import get_verifier

    return get_verifier("greedy" if temperature == 0 else method, **{"validate": False, **(options or {})})


@torch.no_grad()
def generate(  # noqa: PLR0913 (the public entry point: keyword-only documented options)
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
    compile_mode: str | None = None,
    verify_mode: str | None = None,
    capacity: int | None = None,
) -> GenerateOutput:
    """Speculative tree decoding of one prompt.

    input_ids: long [L] or [1, L]. draft: a Hugging Face causal LM or a :class:`Drafter`. At
    ``temperature == 0`` the ``greedy`` verifier is used whatever ``method`` says; ``verifier_options``
    go to ``get_verifier`` (the method's options, e.g. ers ``iterations``). ``eos_token_id`` defaults to
    the target's generation config; pass ``[]`` to disable EOS stopping. ``audit_top=N`` stores each
    verified node's (target, draft) distributions truncated to the top-N tokens (the step keeps copies of
    the node's rows; the entries are built after ``wall_s`` is measured). ``compile_mode`` and
    ``verify_mode`` (None: chosen for the device) are described in ``resispec.decoding.compiled``.
    ``capacity``: the static caches' size, at least this prompt's needs (``run_capacity``): a run passes
    one for all its prompts, so that every prompt reuses the same caches and compiled graphs.
    """
    device = model_device(target_model)
    prompt, tree, temperature, max_new_tokens = generate_arguments(
        target_model, input_ids, tree, temperature, max_new_tokens, device
    )
    if generator is None:
        generator = torch.Generator(device=device)
        generator.seed()
    drafter = _as_drafter(draft)
    pair_vocabularies(target_model, drafter)
    verifier = _verifier(method, temperature, verifier_options)
    compile_mode, verify_mode = compile_mode_for(compile_mode, device), verify_mode_for(verify_mode, device)
    capacity = max(run_capacity([len(prompt)], max_new_tokens, tree), capacity or 0)
    target = _pair_on_caches(target_model, drafter, tree, temperature, capacity, compile_mode)
    start = time.perf_counter()
    drafter.update(prompt, (), target.prefill(prompt))
    loop = _Loop(target, drafter, verifier, tree, temperature, generator, audit_top, verify_mode)
    steps = loop.run(prompt, max_new_tokens, eos_ids(target_model, eos_token_id))
    sync(device)
    wall = time.perf_counter() - start
    loop.fill_times(steps)
    finish_audit(steps)  # the audit's entries, built outside the timed generation
    new_tokens = loop.ids[len(prompt) : len(prompt) + sum(s.accepted_length for s in steps)].clone()
    return GenerateOutput(
        new_tokens,
        steps,
        wall_s=wall,
        prompt_len=len(prompt),
        compile_mode=compile_mode,
        verify_mode=verify_mode,
    )


def _pair_on_caches(target_model, drafter, tree: Tree, temperature: float, capacity: int, compile_mode: str):
    """The drafter configured and reset, and the target on static caches of ``capacity`` positions."""
    drafter.configure(capacity=capacity, compile_mode=compile_mode)
    drafter.reset()
    return new_target(
        target_model,
        tree,
        model_device(target_model),
        drafter.needs_target_features,
        temperature,
        capacity=capacity,
        compile_mode=compile_mode,
    )


def run_capacity(prompt_lengths, max_new_tokens: int, tree: Tree | None = None) -> int:
    """Cache positions a run needs: its longest prompt plus its generation, plus the tree on top."""
    return max(prompt_lengths) + max_new_tokens + (tree.num_nodes + 1 if tree is not None else 0)


@torch.no_grad()
def warm_up(
    target_model,
    draft,
    prompt: torch.Tensor,
    *,
    tree: Tree | str,
    capacity: int,
    compile_mode: str | None = None,
    temperature: float = 1.0,
) -> None:
    """Build every compiled graph of a run before it is timed: the head decision on ``prompt`` (long
    [L], a prompt of the run), the target's tree forward and the drafter's forwards for every pending
    length (``Drafter.warm_up``) on the run's caches of ``capacity`` positions. Nothing is kept."""
    device = model_device(target_model)
    prompt, tree, temperature, _ = generate_arguments(target_model, prompt, tree, temperature, 1, device)
    compile_mode = compile_mode_for(compile_mode, device)
    drafter = _as_drafter(draft)
    target = _pair_on_caches(target_model, drafter, tree, temperature, capacity, compile_mode)
    target.prefill(prompt)
    target.forward_tree(prompt[-1:].repeat(tree.num_nodes))
    drafter.warm_up(tree, prompt)
    drafter.reset()


def _record(result, accepted_length: int) -> StepRecord:
    """A step's record before its times are known."""
    return StepRecord(
        accepted_length,
        result.position_tried,
        result.position_accepted,
        result.depth_tried,
        result.depth_accepted,
        audit=result.audit,
    )


class _Loop:
    """The step loop: draft, target forward, walk on the device, one host copy of the step's decisions
    (``StepDecision.payload``), then the commit (committed ids written on the device, both caches cut)."""

    def __init__(self, target, drafter, verifier, tree, temperature, generator, audit_top, verify_mode):
        self.target, self.drafter, self.verifier, self.tree = target, drafter, verifier, tree
        self.temperature, self.generator, self.audit_top = temperature, generator, audit_top
        self.layout = target.layout
        self.timer = PhaseTimer(target.layout.depths.device)
        self.context = WalkContext.build(
            target, verifier, verify_mode, generator, self.timer, audit=bool(audit_top)
        )
        self.ids = torch.empty(target.cache.capacity, dtype=torch.long, device=target.layout.depths.device)

    def run(self, prompt: torch.Tensor, max_new_tokens: int, eos: set[int]) -> list[StepRecord]:
        self.ids[: len(prompt)] = prompt
        length, produced, steps = len(prompt), 0, []
        finished = max_new_tokens == 0
        self.timer.restart()
        while not finished:
            decision = self._verify_step(length)
            payload = decision.payload.tolist()  # the step's one blocking host-device synchronisation
            result = counts(self.layout, payload, decision, self.audit_top)
            tokens, finished = _truncate(result.tokens, produced, max_new_tokens, eos)
            self.ids[length : length + len(tokens)] = decision.tokens[: len(tokens)]
            length, produced = length + len(tokens), produced + len(tokens)
            if not finished:
                self._commit(decision, result, length)
            self.timer.lap("commit")
            self.timer.end_step()
            steps.append(_record(result, len(tokens)))
        return steps

    def _verify_step(self, length: int):
        draft = self.drafter.propose(
            self.ids[:length],
            self.tree,
            draws=self.verifier.draws,
            temperature=self.temperature,
            generator=self.generator,
        )
        self.timer.lap("draft")
        self.target.forward_tree(draft.tokens)
        self.timer.lap("target")
        return self.context.walk(self.context, draft)

    def _commit(self, decision, result, length: int) -> None:
        accepted = len(result.accepted_nodes)
        self.target.keep_path(decision.path, accepted)
        features = None
        if self.drafter.needs_target_features:  # the root's and the accepted nodes' hidden states
            rows = torch.cat([torch.zeros_like(decision.path[:1]), decision.path[:accepted]])
            features = self.target.hidden.index_select(0, rows)
        self.drafter.update(self.ids[:length], AcceptedNodes(result.accepted_nodes, decision.path), features)

    def fill_times(self, steps: list[StepRecord]) -> None:
        """Each step's phase times (read after the final synchronisation)."""
        for step, times in zip(steps, self.timer.resolve(), strict=True):
            step.time_draft_s, step.time_target_s = times.get("draft", 0.0), times.get("target", 0.0)
            step.time_verify_s, step.time_commit_s = times.get("verify", 0.0), times.get("commit", 0.0)
            step.shaping_time_s = {key: times.get(f"shaping:{key}", 0.0) for key in SHAPING_KEYS}
            step.time_shaping_s = sum(step.shaping_time_s.values())
