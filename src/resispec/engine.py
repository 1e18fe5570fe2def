"""Tree speculative decoding on Hugging Face causal LMs (batch size 1).

Each step: the drafter proposes a tree rooted at the last committed token; the target runs one forward
over all tree nodes (4-D tree mask + position ids on top of its committed-prefix KV cache); the verifier
walks the tree from the root, descending into accepted children, and emits one residual or bonus token;
both caches are then cut to the accepted path.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from .drafters import Drafter, DraftTree, ModelDrafter, process_logits
from .kv_cache import cache_length, keep_positions
from .records import GenerateOutput, StepRecord, audit_entry
from .tree_attention import model_device, model_dtype, tree_mask
from .trees import Tree, parse

__all__ = ["generate", "GenerateOutput", "StepRecord"]


def _sync(device: torch.device) -> None:
    if device.type != "cpu" and hasattr(torch, "accelerator"):
        torch.accelerator.synchronize(device)


class NodeProbs:
    """Target probabilities [V] per tree node, computed on first use.

    With ``head`` (the model's output embedding, checked at prefill to reproduce its logits) only the
    nodes the verification walk visits pay for the vocabulary projection and softmax.
    """

    def __init__(self, temperature: float, logits=None, hidden=None, head=None) -> None:
        self.temperature, self.logits, self.hidden, self.head = temperature, logits, hidden, head
        self._cache: dict[int, torch.Tensor] = {}
        self.seconds = 0.0  # time spent projecting (counted as target time, not verification)

    def __getitem__(self, node: int) -> torch.Tensor:
        if node not in self._cache:
            start = time.perf_counter()
            logits = self.logits[node] if self.head is None else self.head(self.hidden[node])  # [V]
            self._cache[node] = process_logits(logits, self.temperature)
            _sync(self._cache[node].device)
            self.seconds += time.perf_counter() - start
        return self._cache[node]


@dataclass
class _Target:
    """Target model with its KV cache; invariant: the cache holds all committed tokens but the last."""

    model: torch.nn.Module
    cache: object
    ancestors: torch.Tensor  # [N, N] bool
    depths: torch.Tensor  # [N]
    dtype: torch.dtype
    want_features: bool
    temperature: float
    head: torch.nn.Module | None = None

    def prefill(self, prompt: torch.Tensor) -> torch.Tensor | None:
        """Cache the prompt minus its last token; returns features [P-1, H] when wanted.

        Also checks whether output_embeddings(last hidden state) reproduces the model's logits; if so
        later verification forwards project only the visited nodes.
        """
        if len(prompt) < 2:
            return None
        out = self.model(
            input_ids=prompt[None, :-1], cache=self.cache, use_cache=True, output_hidden_states=True
        )
        hidden = out.hidden_states[-1][0]  # [P-1, H]
        head = self.model.get_output_embeddings()
        if head is not None and torch.allclose(head(hidden[-1]), out.logits[0, -1], atol=1e-4, rtol=1e-3):
            self.head = head
        return hidden if self.want_features else None

    def verify_forward(self, tokens: torch.Tensor) -> tuple[NodeProbs, torch.Tensor | None]:
        """One forward over the tree nodes tokens [N]; returns node probabilities and features [N, H]."""
        prefix_len = cache_length(self.cache)
        nodes = torch.arange(len(tokens), device=tokens.device)
        mask = tree_mask(self.ancestors, nodes, nodes[:0], prefix_len, self.dtype)  # [1, 1, N, P + N]
        out = self.model(
            input_ids=tokens[None],
            attention_mask=mask,
            position_ids=(self.depths + prefix_len)[None],
            cache=self.cache,
            use_cache=True,
            output_hidden_states=self.want_features or self.head is not None,
            logits_to_keep=1 if self.head is not None else 0,
        )
        hidden = out.hidden_states[-1][0] if out.hidden_states is not None else None  # [N, H]
        if self.head is not None:
            probs = NodeProbs(self.temperature, hidden=hidden, head=self.head)
        else:
            probs = NodeProbs(self.temperature, logits=out.logits[0])
        return probs, hidden if self.want_features else None

    def keep_path(self, path: list[int], prefix_len: int) -> None:
        """Cut the cache to the committed prefix + root + accepted nodes."""
        slots = [prefix_len + n for n in [0, *path]]
        keep_positions(self.cache, torch.cat([torch.arange(prefix_len), torch.tensor(slots)]))


def _walk(draft: DraftTree, target_probs: NodeProbs, verifier, generator, audit_top):
    """Verify from the root; returns (accepted path nodes, emitted token, record lists, audit)."""
    tree = draft.tree
    valid = draft.valid.tolist()
    position_tried = [0] * tree.max_branch
    position_accepted = [0] * tree.max_branch
    depth_tried = [0] * (tree.depth - 1)
    depth_accepted = [0] * (tree.depth - 1)
    audit, path, node, shaping = [], [], 0, {}
    while True:
        kids = [c for c in tree.children[node] if valid[c]]
        candidates = draft.tokens[kids]  # [k]
        draft_row = draft.draft_probs[node] if kids else target_probs[node]  # leaves: unused by k = 0
        outcome = verifier(target_probs[node], draft_row, candidates, generator)
        index = outcome.accepted_index
        for key, seconds in getattr(verifier, "last_timings", {}).items():
            shaping[key] = shaping.get(key, 0.0) + seconds
        if kids:
            depth = tree.depths[node]
            depth_tried[depth] += 1
            tried = len(kids) if index is None else index + 1
            for i in range(tried):
                position_tried[i] += 1
            if index is not None:
                position_accepted[index] += 1
                depth_accepted[depth] += 1
        if audit_top:
            audit.append(
                audit_entry(
                    target_probs[node], draft_row, candidates, audit_top,
                    node=node, depth=tree.depths[node], accepted_index=index, token=int(outcome.token),
                )
            )  # fmt: skip
        if index is None:
            lists = (position_tried, position_accepted, depth_tried, depth_accepted)
            return path, int(outcome.token), lists, audit, shaping
        node = kids[index]
        path.append(node)


def _new_target(model, tree: Tree, device, want_features: bool, temperature: float) -> _Target:
    from transformers import DynamicCache

    return _Target(
        model,
        DynamicCache(config=model.config),
        tree.ancestor_matrix(device),
        torch.tensor(tree.depths, device=device),
        model_dtype(model),
        want_features,
        temperature,
    )


def _as_drafter(draft) -> Drafter:
    if isinstance(draft, Drafter):
        return draft
    if isinstance(draft, torch.nn.Module):
        return ModelDrafter(draft)
    raise ValueError(f"draft must be a Hugging Face model or a Drafter, got {type(draft).__name__}")


def _eos_set(target_model, eos_token_id) -> set[int]:
    if eos_token_id is None:
        config = getattr(target_model, "generation_config", None)
        eos_token_id = getattr(config, "eos_token_id", None)
    if eos_token_id is None:
        return set()
    return {int(eos_token_id)} if isinstance(eos_token_id, int) else {int(t) for t in eos_token_id}


def _truncate(new: list[int], produced: int, max_new_tokens: int, eos: set[int]) -> tuple[list[int], bool]:
    """Cut a step's tokens at the first EOS or at max_new_tokens; returns (tokens, finished)."""
    room = max_new_tokens - produced
    for i, tok in enumerate(new[:room]):
        if tok in eos:
            return new[: i + 1], True
    return new[:room], len(new) >= room


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
    ``temperature == 0`` the ``greedy`` verifier is used whatever ``method`` says. ``eos_token_id``
    defaults to the target's generation config; pass ``[]`` to disable EOS stopping. ``audit_top=N``
    stores each verified node's (target, draft) distributions truncated to the top-N tokens.
    """
    from .verify import get_verifier

    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    device = model_device(target_model)
    prompt = input_ids.reshape(-1).to(device)
    if prompt.ndim != 1 or len(prompt) == 0:
        raise ValueError(f"input_ids must hold one non-empty sequence, got shape {tuple(input_ids.shape)}")
    if generator is None:
        generator = torch.Generator(device=device)
        generator.seed()
    tree = parse(tree)
    verifier = get_verifier("greedy" if temperature == 0 else method, **(verifier_options or {}))
    drafter = _as_drafter(draft)
    drafter.reset()
    target = _new_target(target_model, tree, device, drafter.needs_target_features, temperature)
    start = time.perf_counter()
    drafter.update(prompt, (), target.prefill(prompt))
    committed, new_tokens, steps = prompt, [], []
    eos = _eos_set(target_model, eos_token_id)
    finished = max_new_tokens == 0
    while not finished:
        step, emitted = _step(target, drafter, verifier, committed, tree, temperature, generator, audit_top)
        emitted, finished = _truncate(emitted, len(new_tokens), max_new_tokens, eos)
        step.accepted_length = len(emitted)
        new_tokens.extend(emitted)
        committed = torch.cat([committed, torch.tensor(emitted, dtype=torch.long, device=device)])
        steps.append(step)
    _sync(device)
    return GenerateOutput(
        tokens=torch.tensor(new_tokens, dtype=torch.long),
        steps=steps,
        wall_s=time.perf_counter() - start,
        prompt_len=len(prompt),
    )


def _step(target, drafter, verifier, committed, tree, temperature, generator, audit_top):
    """One draft / verify / commit step; returns its record and the committed tokens (untruncated)."""
    device = committed.device
    t0 = time.perf_counter()
    draft = drafter.propose(
        committed, tree, draws=verifier.draws, temperature=temperature, generator=generator
    )
    _sync(device)
    t1 = time.perf_counter()
    prefix_len = cache_length(target.cache)
    target_probs, features = target.verify_forward(draft.tokens)  # lazily [N] x [V]
    _sync(device)
    t2 = time.perf_counter()
    path, token, lists, audit, shaping = _walk(draft, target_probs, verifier, generator, audit_top)
    emitted = [int(t) for t in draft.tokens[path].tolist()] + [token]
    target.keep_path(path, prefix_len)
    new_committed = torch.cat([committed, torch.tensor(emitted, dtype=torch.long, device=device)])
    drafter.update(new_committed, path, None if features is None else features[[0, *path]])
    _sync(device)
    t3 = time.perf_counter()
    projection = target_probs.seconds  # lazy vocabulary projections done during the walk
    record = StepRecord(
        len(emitted),
        *lists,
        time_draft_s=t1 - t0,
        time_target_s=t2 - t1 + projection,
        time_verify_s=t3 - t2 - projection,
    )
    record.audit, record.shaping_time_s = audit, shaping
    return record, emitted
