"""Samplers the decoding engine calls at each tree node (contract in docs/architecture.md).

Every sampler runs the same step functions as the exact laws (``plan_step``, ``sequoia_accepted``,
``resispec_residual``'s parts, ``deterministic_step``), so its empirical law is the law computed there.
``last_timings`` holds the seconds spent in the last call, split into budgeting / redistribution / proxy
(wall clock; on an accelerator the split is only meaningful with synchronising devices).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import torch

from . import resispec as resispec_steps
from .checks import as_float64, check_candidates, check_pair, working_dtype
from .greedy import deterministic_step
from .optimal import accept_probability, build_plan, select_position
from .sequential import future_for, plan_step
from .without_replacement import remove_tokens, sequoia_accepted, sequoia_next_residual

# ResiSpec's fill order is needed only until the deficit is filled: a top-k prefix of this many tokens
# (ties included) replaces the full sort of the vocabulary, with the full sort as the fallback
FILL_PREFIX = 64


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


class SequentialVerifier(Verifier):
    """specinfer (greedy plan) and ers (planned future reach), candidates i.i.d. from q."""

    draws = "with_replacement"

    def _verify(self, target, draft, candidates, generator, future_reach=None):
        start = time.perf_counter()
        if self.method == "specinfer":
            futures = [0.0] * len(candidates)
        elif future_reach is not None:
            futures = future_reach.tolist()
        else:
            futures = future_for(self.method, target, draft, len(candidates), **self.options).tolist()
        start = self._tick("budgeting", start)
        residual, reach = target, target.sum()
        for index, token in enumerate(candidates):
            at = slice(token, token + 1)  # c_i(x) first: the full c_i [V] is only needed on rejection
            mass_at = plan_step(residual[at], reach, draft[at], futures[index])  # [1]
            if bool(uniform(target, generator) * reach * draft[token] < mass_at[0]):
                self._tick("proxy", start)
                return VerifyOutcome(index, token)
            start = self._tick("proxy", start)
            mass = plan_step(residual, reach, draft, futures[index])  # [V]
            residual = (residual - mass).clamp_min(0)
            reach = residual.sum()
            start = self._tick("redistribution", start)
        token = draw(residual, generator, target)
        self._tick("proxy", start)
        return VerifyOutcome(None, token)


class SpecInferVerifier(SequentialVerifier):
    method = "specinfer"


class ERSVerifier(SequentialVerifier):
    method = "ers"

    def plan_batch(self, target_probs: torch.Tensor, draft_probs: torch.Tensor, num_candidates: int):
        """Plans of many nodes at once (one batched planning pass, far cheaper per node than planning in
        each call): target/draft [N, V] -> future_reach [N, k]; pass row n as ``future_reach`` when
        verifying node n with k candidates. Any future_reach gives an exact verifier."""
        if self.validate:
            check_pair(target_probs, draft_probs, batched=True)
        start = time.perf_counter()
        dtype = working_dtype(target_probs)
        future = future_for(
            "ers", target_probs.to(dtype), draft_probs.to(dtype), num_candidates, **self.options
        )
        self.last_timings = {"budgeting": time.perf_counter() - start, "redistribution": 0.0, "proxy": 0.0}
        return future.transpose(0, -1).reshape(-1, num_candidates) if future.ndim > 1 else future


class SequoiaVerifier(Verifier):
    """Recursive rejection sampling without replacement (candidates must be distinct)."""

    method = "sequoia"
    draws = "without_replacement"

    def _verify(self, target, draft, candidates, generator):
        residual, current = target, draft
        for index, token in enumerate(candidates):
            accepted = sequoia_accepted(residual, current)  # [V]
            if bool(uniform(target, generator) * current[token] < accepted[token]):
                return VerifyOutcome(index, token)
            residual = sequoia_next_residual(residual, accepted)
            current = remove_tokens(current.unsqueeze(0), torch.tensor([token], device=target.device))[0]
        return VerifyOutcome(None, draw(residual, generator, target))


class ResiSpecVerifier(Verifier):
    """The paper's Algorithm 1 as printed (not exact; see resispec.py)."""

    method = "resispec"
    draws = "with_replacement"

    def __init__(self, *, validate: bool = True, **options):
        super().__init__(validate=validate, **options)
        self.budget = options.get("budget", "local")
        self.order = options.get("order", "decreasing_q")
        resispec_steps.check_options(self.budget, self.order)
        self._order_of: tuple[torch.Tensor, int, torch.Tensor] | None = None  # (draft, version, perm)

    def _fill_order(self, draft: torch.Tensor) -> torch.Tensor:
        """The fill order [V] (a sort of q) of the last draft seen, reused while the same tensor comes back
        unchanged (version counter), as when the audit's Monte Carlo check verifies one node many times."""
        cached = self._order_of
        if cached is not None and cached[0] is draft and cached[1] == draft._version:
            return cached[2]
        perm = resispec_steps.fill_order(draft, self.order)
        self._order_of = (draft, draft._version, perm)
        return perm

    def _verify(self, target, draft, candidates, generator):
        start = time.perf_counter()
        residual = target.unsqueeze(0)  # [1, V]
        perm = prefix = None  # the fill order (full sort) and its partial top-k prefix, built lazily
        for index, token in enumerate(candidates):
            if bool(uniform(target, generator) * draft[token] < residual[0, token]):
                self._tick("proxy", start)
                return VerifyOutcome(index, token)
            start = self._tick("proxy", start)
            tokens = torch.tensor([token], device=target.device)
            budget_z = resispec_steps.budget_mass(residual, draft, tokens, self.budget)
            start = self._tick("budgeting", start)
            share = None
            if self.order == "decreasing_q":  # the deficit is almost always filled by the top-q tokens
                if prefix is None:
                    prefix = resispec_steps.fill_prefix(draft, FILL_PREFIX)
                share = resispec_steps.redistribute_prefix(residual, draft, tokens, budget_z, prefix)
            if share is None:
                if perm is None:
                    perm = self._fill_order(draft)
                share = resispec_steps.redistribute(residual, draft, tokens, budget_z, perm)
            start = self._tick("redistribution", start)
            residual = resispec_steps.proxy_residual(residual, tokens, budget_z, share)
            start = self._tick("proxy", start)
        token = draw(residual[0], generator, target)
        self._tick("proxy", start)
        return VerifyOutcome(None, token)


class OptimalVerifier(Verifier):
    """Perturbed-priority selection, then a single-draft speculative step (optimal.py); attains alpha*.

    ``accepted_index`` is the selected position (duplicates allowed). ``last_timings``: the plan under
    "budgeting", the selection under "redistribution", the accept / residual step under "proxy".
    """

    method = "optimal"
    draws = "with_replacement"

    def _verify(self, target, draft, candidates, generator):
        start = time.perf_counter()
        target, draft = as_float64(target, draft)  # plan in float64 whatever the model dtype
        plan = build_plan(target, draft, len(candidates))
        start = self._tick("budgeting", start)
        tokens = torch.tensor(candidates, device=target.device)
        index = select_position(plan, tokens, draft[tokens] > 0, generator)
        start = self._tick("redistribution", start)
        if index is not None:
            token = candidates[index]
            accept = accept_probability(target[token], plan.selection[token])
            if bool(uniform(target, generator) < accept):
                self._tick("proxy", start)
                return VerifyOutcome(index, token)
        token = draw((target - plan.selection).clamp_min(0), generator, target)
        self._tick("proxy", start)
        return VerifyOutcome(None, token)


class DeterministicVerifier(Verifier):
    """EAGLE-2 verification of fixed (one-hot q) drafts: accept x_i w.p. M_i(x_i) / R_i."""

    method = "deterministic"
    draws = "deterministic"

    def _verify(self, target, draft, candidates, generator):
        residual, reach = target, target.sum()
        for index, token in enumerate(candidates):
            mass, nxt = deterministic_step(residual, token)
            if bool(uniform(target, generator) * reach < mass):
                return VerifyOutcome(index, token)
            residual, reach = nxt, nxt.sum()
        return VerifyOutcome(None, draw(residual, generator, target))


class GreedyVerifier(Verifier):
    """T = 0: the emitted token is argmax target_probs; x_i is accepted iff it is that token."""

    method = "greedy"
    draws = "greedy"

    def _verify(self, target, draft, candidates, generator):
        token = int(torch.argmax(target))
        index = candidates.index(token) if token in candidates else None
        return VerifyOutcome(index, token)

    def _no_candidates(self, target, generator) -> VerifyOutcome:
        return VerifyOutcome(None, int(torch.argmax(target)))


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
