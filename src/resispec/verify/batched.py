"""Batched, sync-free verification of many tree nodes at once (the engine's fast path).

Each row b is one node: its target and draft distributions ``target_probs`` / ``draft_probs`` [B, V],
its candidates ``candidates`` [B, k] (long, padded) and ``valid`` [B, k] (bool; the valid candidates of a
row are a prefix: a node with k_b < k children, or without-replacement drafts that ran out of tokens).
A row with no valid candidate is a leaf: its token is the bonus token drawn from ``target_probs``.

Every method runs the same step functions as its per-node sampler in ``samplers.py`` (``plan_step``,
``sequoia_accepted``, the ResiSpec parts, ``deterministic_step``'s rule), unrolled over the k candidate
positions with device tensors only: candidate i of row b is accepted with the probability the per-node
sampler uses given that candidates 1..i-1 were rejected; a row that rejects all its valid candidates
draws its residual token from the residual after those k_b rejections (inverse CDF, one uniform per row).
Nothing here reads a tensor's value on the host, so a whole tree verifies without a host-device
synchronisation; ``accepted_index`` [B] (-1: rejected all, or a leaf) and ``token`` [B] stay on the
device. The uniforms are drawn once per call ([B, k] + [B]); the order of random draws differs from the
per-node samplers, the laws do not (``tests/verify/test_verify_batched.py``).

``tick(key)``, when given, is called at the end of each shaping phase ("budgeting", "redistribution",
"proxy") of the shaping methods (``ers``: planning and the planned residual; ``resispec``: Algorithm 1's
three parts), so that a caller's timer can split shaping time without synchronising (CUDA events).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from . import registry
from . import resispec as resispec_steps
from .rows import NO_CANDIDATE, BatchOutcome, draw_rows, leaf_outcome
from .sequential import DEFAULT_BINS, plan_step, ratio_bins
from .without_replacement import normalise, sequoia_accepted, sequoia_next_residual

__all__ = [
    "BatchOutcome",
    "RowSettings",
    "verify_rows",
    "acceptance_chain",
    "outcome_law",
    "draw_rows",
    "plan_ers_rows",
    "sample_chain",
]


def __getattr__(name: str):
    """``BATCHED_METHODS`` (every registered method verifies in batches) and ``ERS_OPTIONS``, read from
    the registry."""
    if name == "BATCHED_METHODS":
        return registry.names()
    if name == "ERS_OPTIONS":
        return tuple(registry.get_method("ers").options)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def no_tick(key: str) -> None:
    """Default ``tick``: no timer."""


def _at(values: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """values[b, tokens[b]] for values [B, V] and tokens [B]; [B]."""
    return values.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


def _zero_at(values: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """A copy of values [B, V] with values[b, tokens[b]] = 0."""
    return values.scatter(-1, tokens.unsqueeze(-1), 0.0)


def _ratio(mass: torch.Tensor, capacity: torch.Tensor) -> torch.Tensor:
    """Acceptance probability mass / capacity [B] (0 where the capacity is 0: never drawn)."""
    return torch.where(capacity > 0, mass / capacity.clamp_min(torch.finfo(capacity.dtype).tiny), 0.0)


def sequential_chain(target, draft, candidates, valid, future, tick):
    """specinfer (future None: T = 0) and ers (future [B, k]): c_i = min(R_i q, (M_i - q T_{i+1})^+),
    candidate i accepted with probability c_i(x_i) / (R_i q(x_i))."""
    residual, reach, probs = target, target.sum(-1), []  # [B, V], [B]
    for i in range(candidates.shape[1]):
        token, step_future = candidates[:, i], (0 if future is None else future[:, i])
        at = token.unsqueeze(-1)  # [B, 1]: c_i(x_i) first, the full c_i [B, V] only for the residual
        mass_at = plan_step(residual.gather(-1, at), reach, draft.gather(-1, at), step_future)[:, 0]
        probs.append(_ratio(mass_at, reach * _at(draft, token)))
        tick("proxy")
        mass = plan_step(residual, reach, draft, step_future)  # [B, V]
        residual = torch.where(valid[:, i, None], (residual - mass).clamp_min(0), residual)
        reach = residual.sum(-1)
        tick("redistribution")
    return probs, residual


def sequoia_chain(target, draft, candidates, valid, options, tick):
    """Recursive rejection sampling without replacement: q_i is q with x_1..x_{i-1} removed."""
    residual, current, probs = target, draft, []
    for i in range(candidates.shape[1]):
        token, active = candidates[:, i], valid[:, i, None]
        accepted_mass = sequoia_accepted(residual, current)  # [B, V]
        probs.append(_ratio(_at(accepted_mass, token), _at(current, token)))
        residual = torch.where(active, sequoia_next_residual(residual, accepted_mass), residual)
        current = torch.where(active, normalise(_zero_at(current, token)), current)
    return probs, residual


def deterministic_chain(target, draft, candidates, valid, options, tick):
    """EAGLE-2's fixed drafts: accept x_i with probability M_i(x_i) / R_i, then remove x_i."""
    residual, reach, probs = target, target.sum(-1), []
    for i in range(candidates.shape[1]):
        token = candidates[:, i]
        probs.append(_ratio(_at(residual, token), reach))
        residual = torch.where(valid[:, i, None], _zero_at(residual, token), residual)
        reach = residual.sum(-1)
    return probs, residual


def resispec_chain(target, draft, candidates, valid, options, tick):
    """The printed Algorithm 1 (``resispec.py``), one fill order (a sort of q) per row."""
    budget = options.get("budget", "local")
    order = options.get("order", "decreasing_q")
    resispec_steps.check_options(budget, order)
    if order == "index":
        perms = torch.arange(draft.shape[-1], device=draft.device).expand_as(draft)
    else:
        perms = resispec_steps.fill_order(draft, order)  # [B, V]
    tick("redistribution")
    residual, probs = target, []
    for i in range(candidates.shape[1]):
        token, active = candidates[:, i], valid[:, i, None]
        probs.append(_ratio(torch.minimum(_at(residual, token), _at(draft, token)), _at(draft, token)))
        tick("proxy")
        budget_z = resispec_steps.budget_mass(residual, draft, token, budget)  # [B]
        tick("budgeting")
        share = resispec_steps.redistribute_rows(residual, draft, token, budget_z, perms)
        tick("redistribution")
        new = resispec_steps.proxy_residual(residual, token, budget_z, share)
        residual = torch.where(active, new, residual)
        tick("proxy")
    return probs, residual


def greedy_rows(target, draft, candidates, valid, generator) -> BatchOutcome:
    """T = 0: the token is argmax p; x_i is accepted iff it is that token (first such position)."""
    token = target.argmax(-1)  # [B]
    match = (candidates == token.unsqueeze(-1)) & valid  # [B, k]
    return BatchOutcome(_first(match), token)


def _first(hits: torch.Tensor) -> torch.Tensor:
    """Index of the first True of each row of hits [B, k], -1 if none; [B]."""
    k = hits.shape[1]
    if k == 0:
        return torch.full(hits.shape[:1], NO_CANDIDATE, dtype=torch.long, device=hits.device)
    first = torch.where(hits, torch.arange(k, device=hits.device), k).amin(-1)
    return torch.where(first < k, first, NO_CANDIDATE)


def _active_plan(target, draft, future, active):
    """Reaches R_1..R_{k+1} [k+1, B] of a plan run whose steps i with ``active[:, i]`` False accept
    nothing (a row with fewer candidates); ``future`` [B, k]."""
    residual, reach = target, target.sum(-1)
    reaches = [reach]
    for i in range(future.shape[1]):
        mass = plan_step(residual, reach, draft, future[:, i])
        residual = torch.where(active[:, i, None], (residual - mass).clamp_min(0), residual)
        reach = residual.sum(-1)
        reaches.append(reach)
    return torch.stack(reaches)


def plan_ers_rows(target, draft, active, options=None, tick=None):
    """``ers`` future reach [B, k] of rows whose candidates ``active`` [B, k] (bool) are a prefix: the
    planning pass of ``sequential.future_for`` / ``plan_ers`` on the ratio bins, batched, without its early
    exit (converged rows stay frozen, as there) and with each row's future reach summing only its own
    steps' reaches, as a plan for k_b candidates does. Any future reach gives an exact verifier."""
    options, tick = registry.get_method("ers").check_options(options), tick or no_tick
    bins = options.get("bins", DEFAULT_BINS)
    iterations = options.get("iterations", 8)
    damping, tol = options.get("damping", 0.0), options.get("tol", 1e-5)
    if bins is not None and bins < target.shape[-1]:
        target, draft = ratio_bins(target, draft, bins)
    k = active.shape[1]
    steps = active.T.to(target.dtype)  # [k, B]
    best = target.new_zeros(target.shape[0], k)  # greedy plan
    smoothed = _active_plan(target, draft, best, active)  # [k + 1, B]
    best_accept = 1 - smoothed[-1]
    done = torch.zeros_like(best_accept, dtype=torch.bool)
    for _ in range(iterations):
        inner = smoothed[1:-1] * steps[1:]  # R_2..R_k, [k - 1, B]: a row's inactive steps count nothing
        future = (torch.cat([inner.flip(0).cumsum(0).flip(0), torch.zeros_like(smoothed[:1])]) * steps).T
        new = _active_plan(target, draft, future, active)
        accept = 1 - new[-1]
        better = (accept > best_accept) & ~done
        best = torch.where(better.unsqueeze(-1), future, best)
        best_accept = torch.where(better, accept, best_accept)
        done = done | ((new - smoothed).abs().amax(0) < tol)
        smoothed = torch.where(done, smoothed, damping * smoothed + (1 - damping) * new)
    tick("budgeting")
    return best


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


def sample_chain(
    chain, target_probs, draft_probs, candidates, valid, generator, options, tick
) -> BatchOutcome:
    """Sample a sequential method from its ``chain(target, draft, candidates, valid, options, tick) ->
    (probs, residual)`` (see ``_chain``): candidate i accepted with probs[:, i] given the earlier ones were
    rejected, else one residual token per row."""
    if candidates.shape[1] == 0:
        return leaf_outcome(target_probs, generator)
    target, draft = _working(target_probs, draft_probs)
    probs, residual = _chain(chain, target, draft, candidates, valid, options, tick)  # [B, k], [B, V]
    rows, k = candidates.shape
    uniforms = torch.rand(rows, k, generator=generator, device=target.device, dtype=target.dtype)
    final = torch.rand(rows, generator=generator, device=target.device, dtype=torch.float64)
    accepted = _first((uniforms < probs) & valid)  # [B]
    residual_token = draw_rows(residual, final, target)
    chosen = candidates.gather(-1, accepted.clamp_min(0).unsqueeze(-1)).squeeze(-1) if k else residual_token
    tick("proxy")
    return BatchOutcome(accepted, torch.where(accepted >= 0, chosen, residual_token))


def _working(target_probs, draft_probs):
    """Samplers compute in float32 at least (``checks.working_dtype``), float64 inputs stay float64."""
    dtype = torch.float64 if target_probs.dtype == torch.float64 else torch.float32
    return target_probs.to(dtype), draft_probs.to(dtype)


def _chain(chain, target, draft, candidates, valid, options, tick):
    """Acceptance probability of each candidate given the earlier ones were rejected [B, k] (0 where not
    valid) and the residual measure after all valid candidates are rejected [B, V]."""
    probs, residual = chain(target, draft, candidates, valid, options, tick)
    if not probs:
        return target.new_zeros(candidates.shape), residual
    return torch.stack(probs, dim=-1) * valid, residual


def acceptance_chain(method, target_probs, draft_probs, candidates, valid, *, options=None):
    """The chain ``verify_rows`` samples from (sequential methods: those with a ``chain``): the probability
    [B, k] that candidate i is accepted given that the earlier ones were rejected, and the residual
    measure [B, V] after all valid candidates are rejected."""
    entry = registry.get_method(method) if method in registry.names() else None
    if getattr(entry, "chain", None) is None:
        raise ValueError(f"the acceptance chain covers the sequential methods, not {method!r}")
    target, draft = _working(target_probs, draft_probs)
    return _chain(entry.chain, target, draft, candidates, valid, entry.check_options(options), no_tick)


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
