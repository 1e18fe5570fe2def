"""The per-node sampler contract (docs/architecture.md, "Verifier sampler"): ``VerifyOutcome``, the
``Verifier`` base (validation, the k = 0 case, timing bookkeeping), the inverse-CDF ``draw`` and
``RowVerifier`` (any registered method's batched ``verify`` on one row). Each built-in family's own
per-node sampler subclasses ``Verifier`` in the family's module and runs the same step functions as its
exact law, so its empirical law is the law computed there. ``last_timings`` holds the seconds spent in the
last call, split into budgeting / redistribution / proxy (wall clock; on an accelerator the split is only
meaningful with synchronising devices).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import torch

from .checks import check_candidates, check_pair, working_dtype


class VerifyOutcome(NamedTuple):
    accepted_index: int | None
    token: int


def draw(measure: torch.Tensor, generator: torch.Generator, fallback: torch.Tensor) -> int:
    """One token from an unnormalised measure [V] by inverse CDF in float64 (faster than multinomial).

    Zero-mass tokens are never drawn (first index whose CDF exceeds u); ``fallback`` is used if the
    measure has no mass at all (a null event of the exact algorithms, reachable only through rounding).
    """
    cdf = measure.double().cumsum(0)  # [V]
    if not bool(cdf[-1] > 0):
        cdf = fallback.double().cumsum(0)
    point = torch.rand((), generator=generator, device=cdf.device, dtype=cdf.dtype) * cdf[-1]
    return min(int(torch.searchsorted(cdf, point, right=True)), cdf.shape[0] - 1)


def uniform(like: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    return torch.rand((), generator=generator, device=like.device, dtype=like.dtype)


class Verifier:
    """Base class: validation, the k = 0 case and timing bookkeeping."""

    method = ""
    draws = ""

    def __init__(self, *, validate: bool = True, **options):
        """``options``: the method's, already checked (``registry.Method.check_options``)."""
        self.validate = validate
        self.options = options
        self.last_timings: dict[str, float] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(method={self.method!r}, draws={self.draws!r}, options={self.options})"

    def __call__(
        self, target_probs, draft_probs, candidates, generator, *, future_reach=None
    ) -> VerifyOutcome:
        """Verify one node. ``future_reach`` [k] (ers only): a plan from ``plan_batch``, skipping planning."""
        if self.validate:
            check_pair(target_probs, draft_probs)
            check_candidates(candidates, target_probs.shape[-1])
        if future_reach is not None and self.method != "ers":
            raise ValueError(f"future_reach is only meaningful for ers, not {self.method}")
        dtype = working_dtype(target_probs)
        target, draft = target_probs.to(dtype), draft_probs.to(dtype)
        self.last_timings = {"budgeting": 0.0, "redistribution": 0.0, "proxy": 0.0}
        if candidates.numel() == 0:
            return self._no_candidates(target, generator)
        if future_reach is not None:
            if future_reach.shape != (candidates.numel(),):
                shape = tuple(future_reach.shape)
                raise ValueError(f"future_reach must have shape [k] = ({candidates.numel()},), got {shape}")
            return self._verify(target, draft, candidates.tolist(), generator, future_reach)
        return self._verify(target, draft, candidates.tolist(), generator)

    def _no_candidates(self, target, generator) -> VerifyOutcome:
        return VerifyOutcome(None, draw(target, generator, target))

    def _tick(self, key: str, start: float) -> float:
        now = time.perf_counter()
        self.last_timings[key] += now - start
        return now


class RowVerifier(Verifier):
    """Any registered method's per-node sampler: its batched ``verify`` on a single row (the default of
    ``registry.Method.node_verifier``, so a method of one's own needs no per-node code)."""

    def __init__(self, entry, *, validate: bool = True, **options):
        self.entry, self.method, self.draws = entry, entry.name, entry.draws
        super().__init__(validate=validate, **entry.check_options(options))

    def _verify(self, target, draft, candidates, generator):
        tokens = torch.tensor([candidates], dtype=torch.long, device=target.device)  # [1, k]
        valid = torch.ones_like(tokens, dtype=torch.bool)
        accepted, token = self.entry.verify(
            target[None], draft[None], tokens, valid, generator, **self.options
        )
        index = int(accepted[0])
        return VerifyOutcome(index if index >= 0 else None, int(token[0]))

    def _no_candidates(self, target, generator) -> VerifyOutcome:
        return self._verify(target, target, [], generator)
