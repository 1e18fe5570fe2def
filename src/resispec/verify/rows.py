"""Row-batched helpers shared by every family's batched verifier: the outcome type, the inverse-CDF draw,
the per-row gathers of the acceptance chains and the sampling of a chain.

Each row b is one node: its target and draft distributions [B, V], its candidates [B, k] (long, padded)
and ``valid`` [B, k] (bool; a prefix of each row). A sequential method is written as a *chain*
``chain(target, draft, candidates, valid, options, tick) -> (probs, residual)``: the probability that
candidate i is accepted given that candidates 1..i-1 were rejected (a list of k tensors [B]) and the
residual measure after all valid candidates are rejected [B, V]; ``sample_chain`` samples it with one
uniform per candidate and one per row, reading nothing on the host.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

NO_CANDIDATE = -1  # ``accepted_index`` of a row that accepts none of its candidates (or has none: a leaf)


class BatchOutcome(NamedTuple):
    """``accepted_index`` long [B] (index into the row's candidates, ``NO_CANDIDATE`` if none) and
    ``token`` long [B] (the accepted candidate, else the residual or bonus token)."""

    accepted_index: torch.Tensor
    token: torch.Tensor


def no_tick(key: str) -> None:
    """Default ``tick`` (a phase timer's callback, called at the end of a shaping phase): no timer."""


def draw_rows(measure: torch.Tensor, uniform: torch.Tensor, fallback: torch.Tensor) -> torch.Tensor:
    """One token per row of an unnormalised measure [B, V] by inverse CDF in float64 (``samplers.draw``
    batched): the first index whose CDF exceeds u * total; rows without mass use ``fallback`` [B, V]."""
    cdf = measure.double().cumsum(-1)  # [B, V]
    empty = ~(cdf[:, -1:] > 0)  # [B, 1]
    cdf = torch.where(empty, fallback.double().cumsum(-1), cdf)
    point = uniform.double().unsqueeze(-1) * cdf[:, -1:]  # [B, 1]
    index = torch.searchsorted(cdf, point, right=True)[:, 0]
    return index.clamp(max=cdf.shape[-1] - 1)


def leaf_outcome(target_probs: torch.Tensor, generator: torch.Generator) -> BatchOutcome:
    """Rows without candidates (leaves): the bonus token drawn from the target [B, V], whatever the method."""
    rows, device = target_probs.shape[0], target_probs.device
    final = torch.rand(rows, generator=generator, device=device, dtype=torch.float64)
    none = torch.full((rows,), NO_CANDIDATE, dtype=torch.long, device=device)
    return BatchOutcome(none, draw_rows(target_probs, final, target_probs))


def value_at(values: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """values[b, tokens[b]] for values [B, V] and tokens [B]; [B]."""
    return values.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


def zero_at(values: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """A copy of values [B, V] with values[b, tokens[b]] = 0."""
    return values.scatter(-1, tokens.unsqueeze(-1), 0.0)


def ratio(mass: torch.Tensor, capacity: torch.Tensor) -> torch.Tensor:
    """Acceptance probability mass / capacity [B] (0 where the capacity is 0: never drawn)."""
    return torch.where(capacity > 0, mass / capacity.clamp_min(torch.finfo(capacity.dtype).tiny), 0.0)


def first_hit(hits: torch.Tensor) -> torch.Tensor:
    """Index of the first True of each row of hits [B, k], ``NO_CANDIDATE`` if none; [B]."""
    k = hits.shape[1]
    if k == 0:
        return torch.full(hits.shape[:1], NO_CANDIDATE, dtype=torch.long, device=hits.device)
    first = torch.where(hits, torch.arange(k, device=hits.device), k).amin(-1)
    return torch.where(first < k, first, NO_CANDIDATE)


def working_rows(target_probs: torch.Tensor, draft_probs: torch.Tensor):
    """Samplers compute in float32 at least (``checks.working_dtype``), float64 inputs stay float64."""
    dtype = torch.float64 if target_probs.dtype == torch.float64 else torch.float32
    return target_probs.to(dtype), draft_probs.to(dtype)


def run_chain(chain, target, draft, candidates, valid, options, tick):
    """Acceptance probability of each candidate given the earlier ones were rejected [B, k] (0 where not
    valid) and the residual measure after all valid candidates are rejected [B, V]."""
    probs, residual = chain(target, draft, candidates, valid, options, tick)
    if not probs:
        return target.new_zeros(candidates.shape), residual
    return torch.stack(probs, dim=-1) * valid, residual


def sample_chain(
    chain, target_probs, draft_probs, candidates, valid, generator, options, tick
) -> BatchOutcome:
    """Sample a sequential method from its ``chain`` (module docstring): candidate i accepted with
    probs[:, i] given the earlier ones were rejected, else one residual token per row."""
    if candidates.shape[1] == 0:
        return leaf_outcome(target_probs, generator)
    target, draft = working_rows(target_probs, draft_probs)
    probs, residual = run_chain(chain, target, draft, candidates, valid, options, tick)  # [B, k], [B, V]
    rows, k = candidates.shape
    uniforms = torch.rand(rows, k, generator=generator, device=target.device, dtype=target.dtype)
    final = torch.rand(rows, generator=generator, device=target.device, dtype=torch.float64)
    accepted = first_hit((uniforms < probs) & valid)  # [B]
    residual_token = draw_rows(residual, final, target)
    chosen = candidates.gather(-1, accepted.clamp_min(0).unsqueeze(-1)).squeeze(-1) if k else residual_token
    tick("proxy")
    return BatchOutcome(accepted, torch.where(accepted >= 0, chosen, residual_token))
