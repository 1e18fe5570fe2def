"""Checks at the API boundary: `generate`'s arguments and the tree specs that sheets and `generate` share.

`tree_spec` is the one parser of a tree spec: the experiment sheets validate their `tree` column with it
and `generate` builds its tree with it, so both accept the same specs and reject bad ones with the same
message. Specs that need the pair's measured acceptance (``sequoiaNxD``, ``auto``, ``auto-METHOD``) are
checked for form here and built by `tree_specs.resolve` with the pair profile (the workflow's decode
jobs); `generate`, which has no profile, refuses them naming what they need.
"""

from __future__ import annotations

import math
import numbers
import operator
from typing import NamedTuple

import torch

from resispec.decoding import tree_specs
from resispec.decoding.trees import Tree

SPEC_FORMS = "dXbY, chainN, kNdD, sequoiaNxD, eagle, auto or auto-METHOD"
MIN_NODES = 2  # a spec names the root and at least one drafted node: a root-only spec is a typo


def _tree_error(spec: object, reason: str) -> ValueError:
    return ValueError(f"tree spec {spec!r}: {reason}")


def _check_tree(spec: object, tree: Tree) -> Tree:
    if tree.num_nodes < MIN_NODES:
        raise _tree_error(spec, "drafts no token (zero depth or branching below the root)")
    return tree


def _check_profile_spec(spec: str, text: str) -> None:
    """Form checks of the specs built from the pair profile (no tree is built here)."""
    from resispec.verify import METHODS

    if m := tree_specs.SEQUOIA.fullmatch(text):
        nodes, levels = int(m.group(1)), int(m.group(2))
        if nodes < MIN_NODES or levels < MIN_NODES:
            reason = f"sequoiaNxD needs N >= 2 nodes and D >= 2 levels, got N={nodes}, D={levels}"
            raise _tree_error(spec, reason)
    elif m := tree_specs.AUTO.fullmatch(text):
        method = m.group(1) or "specinfer"
        if method not in METHODS:
            raise _tree_error(
                spec, f"unknown verifier {method!r} in auto-METHOD (known: {', '.join(METHODS)})"
            )


def tree_spec(spec: Tree | str) -> Tree | None:
    """Check a tree spec (a sheet's `tree` column or `generate`'s `tree`): the Tree it names, or None for a
    well-formed spec that needs the pair profile (``tree_specs.profile_methods``). ValueError names the
    spec and what is wrong with it."""
    if isinstance(spec, Tree):  # built by the caller: the root-only tree is what `auto` picks when no
        return spec  # speculation pays (each step one target forward and its bonus token: autoregressive)
    if not isinstance(spec, str) or not spec.strip():
        raise _tree_error(spec, f"expected a Tree or a non-empty string ({SPEC_FORMS})")
    tree_specs.check_nodes(spec)  # from the spec's numbers: nothing is built above the cap
    text = spec.strip().lower()
    if tree_specs.profile_methods(text):
        _check_profile_spec(spec, text)
        return None
    try:
        tree = tree_specs.resolve(text)
    except ValueError as exc:  # the builders' own reasons (zero depth, zero branching, ...)
        reason = f"not understood (expected {SPEC_FORMS})" if "not understood" in str(exc) else str(exc)
        raise _tree_error(spec, reason) from exc
    return _check_tree(spec, tree)


def generate_tree(spec: Tree | str) -> Tree:
    """`generate`'s tree: every spec a sheet accepts; those that need the pair profile are refused with
    what they need (build them with ``tree_specs.resolve(spec, acceptance, profile=...)``)."""
    tree = tree_spec(spec)
    if tree is None:
        raise _tree_error(
            spec,
            "needs the pair profile (sequoiaNxD: the draft's positional acceptance; auto: the cost profile "
            "too); build it with resispec.decoding.tree_specs.resolve(spec, acceptance, profile=...) "
            "and pass the Tree",
        )
    return tree


def vocab_size(model: torch.nn.Module) -> int:
    """Rows of the model's input embedding (the ids it can read), else its config's vocab_size."""
    embeddings = getattr(model, "get_input_embeddings", lambda: None)()
    if embeddings is not None and hasattr(embeddings, "num_embeddings"):
        return int(embeddings.num_embeddings)
    return int(model.config.vocab_size)


def output_vocab_size(model: torch.nn.Module) -> int:
    """Columns of the model's logits: its output head's vocabulary (a reduced-vocabulary head of
    `resispec.models.reduced_vocab` scores the full vocabulary, q = 0 outside its tokens), else its
    config's vocab_size."""
    head = getattr(model, "get_output_embeddings", lambda: None)()
    for size in (getattr(head, "vocab_size", None), getattr(head, "out_features", None)):
        if isinstance(size, int):
            return size
    return int(model.config.vocab_size)


def pair_vocabularies(target_model: torch.nn.Module, draft) -> None:
    """ValueError naming both sizes unless the draft scores the target's vocabulary (the verifiers compare
    p and q token by token) and reads every token the target emits. ``draft``: a Hugging Face model or a
    Drafter; a drafter without a ``model`` (EAGLE heads score with the target's own head) is not checked."""
    model = draft if isinstance(draft, torch.nn.Module) else getattr(draft, "model", None)
    if not isinstance(model, torch.nn.Module):
        return
    target_out, draft_out, draft_in = (
        output_vocab_size(target_model),
        output_vocab_size(model),
        vocab_size(model),
    )
    if draft_out != target_out:
        raise ValueError(
            f"draft vocabulary: the draft scores {draft_out} tokens, the target {target_out}; draft and "
            "target must share one vocabulary (a reduced-vocabulary draft, resispec.models.reduced_vocab, "
            "keeps the target's size with q = 0 outside its tokens)"
        )
    if draft_in < target_out:
        raise ValueError(
            f"draft vocabulary: the draft reads {draft_in} token ids, fewer than the {target_out} the target "
            "emits; draft and target must share one vocabulary"
        )


def prompt_ids(input_ids, vocab: int, device: torch.device | str) -> torch.Tensor:
    """One prompt as a 1-D long tensor on ``device``: input_ids [L] or [1, L] of integer ids in [0, vocab)."""
    ids = input_ids if isinstance(input_ids, torch.Tensor) else torch.as_tensor(input_ids)
    if ids.dtype == torch.bool or ids.dtype.is_floating_point or ids.dtype.is_complex:
        raise ValueError(f"input_ids must hold integer token ids, got dtype {ids.dtype}")
    if ids.ndim == 2 and ids.shape[0] == 1:
        ids = ids[0]
    if ids.ndim != 1:
        raise ValueError(
            f"input_ids must hold exactly one sequence ([L] or [1, L]), got shape {tuple(ids.shape)}; "
            "decode each sequence of a batch with its own call"
        )
    if len(ids) == 0:
        raise ValueError("input_ids must hold a non-empty sequence, got shape (0,)")
    low, high = torch.stack(torch.aminmax(ids)).tolist()  # one host sync per call, at the boundary
    if low < 0 or high >= vocab:
        bad = low if low < 0 else high
        raise ValueError(f"input_ids: token id {bad} is outside the target's vocabulary [0, {vocab})")
    return ids.to(device=device, dtype=torch.long)


def _temperature(temperature) -> float:
    if isinstance(temperature, torch.Tensor) and temperature.numel() == 1:
        temperature = temperature.item()
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        raise ValueError(f"temperature must be a real number >= 0, got {temperature!r}")
    value = float(temperature)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"temperature must be finite and >= 0 (0 = greedy), got {temperature!r}")
    return value


def _max_new_tokens(max_new_tokens) -> int:
    try:
        if isinstance(max_new_tokens, bool):
            raise TypeError
        value = operator.index(max_new_tokens)
    except TypeError:
        raise ValueError(f"max_new_tokens must be an integer >= 0, got {max_new_tokens!r}") from None
    if value < 0:
        raise ValueError(f"max_new_tokens must be an integer >= 0, got {max_new_tokens!r}")
    return value


class GenerateArguments(NamedTuple):
    prompt: torch.Tensor  # long [L] on the target's device
    tree: Tree
    temperature: float
    max_new_tokens: int


def generate_arguments(
    target_model: torch.nn.Module,
    input_ids,
    tree: Tree | str,
    temperature,
    max_new_tokens,
    device: torch.device | str,
) -> GenerateArguments:
    """Validate and normalise `generate`'s arguments; ValueError names the argument and shows its value."""
    return GenerateArguments(
        prompt_ids(input_ids, vocab_size(target_model), device),
        generate_tree(tree),
        _temperature(temperature),
        _max_new_tokens(max_new_tokens),
    )
