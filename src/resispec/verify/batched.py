"""Batched, sync-free verification of many tree nodes at once (the engine's entry): ``verify_rows``
hands the rows to the registered method (``Method.verify_rows``); each family's batched sampler lives in
the family's module, beside its per-node sampler and its law.

Each row b is one node: its target and draft distributions ``target_probs`` / ``draft_probs`` [B, V],
its candidates ``candidates`` [B, k] (long, padded) and ``valid`` [B, k] (bool; the valid candidates of a
row are a prefix: a node with k_b < k children, or without-replacement drafts that ran out of tokens).
A row with no valid candidate is a leaf: its token is the bonus token drawn from ``target_probs``.

Every built-in runs the same step functions as its per-node sampler (``plan_step``, ``sequoia_accepted``,
the ResiSpec parts, ``deterministic_step``'s rule), unrolled over the k candidate positions with device
tensors only (a sequential method as an acceptance chain, ``rows.py``): candidate i of row b is accepted
with the probability the per-node sampler uses given that candidates 1..i-1 were rejected; a row that
rejects all its valid candidates draws its residual token from the residual after those k_b rejections
(inverse CDF, one uniform per row). Nothing reads a tensor's value on the host, so a whole tree verifies
without a host-device synchronisation; ``accepted_index`` [B] (``NO_CANDIDATE``: rejected all, or a
leaf) and ``token`` [B] stay on the device. The uniforms are drawn once per call ([B, k] + [B]); the
order of random draws differs from the per-node samplers, the laws do not
(``tests/verify/test_verify_batched.py``).

``tick(key)``, when given, is called at the end of each shaping phase ("budgeting", "redistribution",
"proxy") of the shaping methods (``ers``: planning and the planned residual; ``resispec``: Algorithm 1's
three parts), so that a caller's timer can split shaping time without synchronising (CUDA events).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from . import registry
from .rows import BatchOutcome, no_tick, run_chain, working_rows

__all__ = ["BatchOutcome", "RowSettings", "verify_rows", "acceptance_chain", "outcome_law"]


def __getattr__(name: str):
    """``BATCHED_METHODS`` (every registered method verifies in batches) and ``ERS_OPTIONS``, read from
    the registry."""
    if name == "BATCHED_METHODS":
        return registry.names()
    if name == "ERS_OPTIONS":
        return tuple(registry.get_method("ers").options)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class RowSettings:
    """How a batched call runs, besides its rows: the method's ``options`` (ers iterations / damping /
    tol / bins, resispec budget / order; checked against the method's option names), ``tick`` (a phase
    timer's callback, see the module docstring; none by default) and ``host_planning`` (let a method with
    a host planner, ``Method.host_planner``, plan row by row with host reads, cheaper on a CPU for one
    row, instead of its fixed-shape batched plan)."""

    options: dict | None = None
    tick: Callable[[str], None] | None = None
    host_planning: bool = False


def verify_rows(
    method: str,
    target_probs: torch.Tensor,
    draft_probs: torch.Tensor,
    candidates: torch.Tensor,
    valid: torch.Tensor,
    generator: torch.Generator,
    settings: RowSettings | None = None,
) -> BatchOutcome:
    """Verify B nodes at once without host synchronisation with the registered ``method``; see the
    module docstring.

    target_probs, draft_probs: [B, V] (float32 or float64; ``optimal`` plans in float64); candidates:
    long [B, k]; valid: bool [B, k]; ``settings``: options, timer and host planning (``RowSettings``).
    """
    settings = settings or RowSettings()
    entry = registry.get_method(method)
    options = entry.check_options(settings.options)
    tick = (settings.tick or no_tick) if entry.shaping else no_tick
    host_plan = settings.host_planning and entry.host_planner
    return entry.verify_rows(
        target_probs, draft_probs, candidates, valid, generator, options, tick, host_plan
    )


def acceptance_chain(method, target_probs, draft_probs, candidates, valid, *, options=None):
    """The chain ``verify_rows`` samples from (sequential methods: those with a ``chain``): the probability
    [B, k] that candidate i is accepted given that the earlier ones were rejected, and the residual
    measure [B, V] after all valid candidates are rejected."""
    entry = registry.get_method(method) if method in registry.names() else None
    if getattr(entry, "chain", None) is None:
        raise ValueError(f"the acceptance chain covers the sequential methods, not {method!r}")
    target, draft = working_rows(target_probs, draft_probs)
    return run_chain(entry.chain, target, draft, candidates, valid, entry.check_options(options), no_tick)


def outcome_law(method, target_probs, draft_probs, candidates, valid, *, options=None):
    """Exact law [B, V] of the token ``verify_rows`` emits given each row's candidates, and the
    probability [B] that a candidate is accepted (sequential methods: the sampler's own chain)."""
    probs, residual = acceptance_chain(method, target_probs, draft_probs, candidates, valid, options=options)
    target = target_probs.to(residual.dtype)
    reach = torch.cumprod(torch.cat([torch.ones_like(probs[:, :1]), 1 - probs], dim=-1), dim=-1)  # [B, k + 1]
    emitted = reach[:, :-1] * probs  # [B, k]: P(candidate i is the accepted one)
    law = torch.zeros_like(target).scatter_add_(-1, candidates, emitted)
    total = residual.sum(-1, keepdim=True)
    rest = torch.where(total > 0, residual / total.clamp_min(torch.finfo(total.dtype).tiny), target)
    return law + reach[:, -1:] * rest, emitted.sum(-1)
