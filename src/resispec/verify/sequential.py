"""The exact sequential family with replacement (spec sections 2 and 4): plans, laws, acceptance.

A plan is a per-step rule ``plan_step`` giving accepted masses c_i(v). ``specinfer`` is the greedy plan
(future reach T = 0), ``ers`` uses the planned future reach T_{i+1} = sum_{j>i} R_j. The per-node
samplers (``SequentialVerifier``) and the batched chain (``sequential_chain``, with ``plan_ers_rows``)
call the very same ``plan_step`` with the same T, so laws and samplers agree; ``SpecInfer`` and ``ERS``
are the two methods' registry objects. The law functions broadcast over leading batch dimensions:
tensors are [..., V], reaches [...].
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np
import torch

from .checks import check_pair, working_dtype
from .method_base import Chained
from .registry import get_method
from .rows import no_tick, ratio, value_at
from .samplers import Verifier, VerifyOutcome, draw, uniform

# Planning defaults: undamped iterations reach the damped (spec: R <- (R + R_new) / 2, damping=0.5)
# fixed point's acceptance in ~8 instead of ~20 runs on the benchmark pairs; any plan stays exact.
DEFAULT_ITERATIONS = 8
DEFAULT_DAMPING = 0.0
DEFAULT_TOL = 1e-5
DEFAULT_BINS = 128  # ers plans on p/q bins when V > DEFAULT_BINS (option bins=None: full vocabulary)


def plan_step(
    residual: torch.Tensor, reach: torch.Tensor, draft_probs: torch.Tensor, future_reach: torch.Tensor | float
) -> torch.Tensor:
    """Accepted mass c_i [..., V] = min(R_i q_i, max(0, M_i - q_i T_{i+1})); T = 0 gives the greedy plan."""
    reach = torch.as_tensor(reach, dtype=residual.dtype, device=residual.device)
    capacity = reach.unsqueeze(-1) * draft_probs  # [..., V]
    if isinstance(future_reach, (int, float)) and future_reach == 0:
        return torch.minimum(residual, capacity)
    future = torch.as_tensor(future_reach, dtype=residual.dtype, device=residual.device)
    deferred = (residual - draft_probs * future.unsqueeze(-1)).clamp_min(0)  # [..., V]
    return torch.minimum(capacity, deferred)


class PlanRun(NamedTuple):
    """A plan run with replacement: accepted masses c [k, ..., V], reaches R_1..R_{k+1} [k+1, ...] and
    the final residual M_{k+1} [..., V]."""

    accepted: torch.Tensor
    reaches: torch.Tensor
    residual: torch.Tensor


def run_plan(target_probs: torch.Tensor, draft_probs: torch.Tensor, future_reach: torch.Tensor) -> PlanRun:
    """Run a plan with replacement. future_reach [k, ...] holds T_2..T_{k+1} (last one 0).

    Returns accepted masses c [k, ..., V], reaches R [k+1, ...] (R_1..R_{k+1}) and the final residual
    M_{k+1} [..., V].
    """
    residual = target_probs
    reach = residual.sum(-1)
    accepted, reaches = [], [reach]
    for step in range(future_reach.shape[0]):
        mass = plan_step(residual, reach, draft_probs, future_reach[step])
        residual = (residual - mass).clamp_min(0)
        reach = residual.sum(-1)
        accepted.append(mass)
        reaches.append(reach)
    return PlanRun(torch.stack(accepted), torch.stack(reaches), residual)


def future_from_reach(reaches: torch.Tensor) -> torch.Tensor:
    """T_{i+1} = sum_{j=i+1..k} R_j for i = 1..k, from reaches [k+1, ...]; returns [k, ...]."""
    inner = reaches[1:-1]  # R_2..R_k, [k-1, ...]
    tail = inner.flip(0).cumsum(0).flip(0)  # T_2..T_k
    return torch.cat([tail, torch.zeros_like(reaches[:1])])


def greedy_future(target_probs: torch.Tensor, num_candidates: int) -> torch.Tensor:
    """The greedy (specinfer) plan: T = 0 at every step, [k, ...]."""
    return target_probs.new_zeros((num_candidates,) + tuple(target_probs.shape[:-1]))


def plan_ers(
    target_probs: torch.Tensor,
    draft_probs: torch.Tensor,
    num_candidates: int,
    *,
    iterations: int = DEFAULT_ITERATIONS,
    damping: float = DEFAULT_DAMPING,
    tol: float = DEFAULT_TOL,
) -> torch.Tensor:
    """ERS planning pass (spec section 4): damped fixed point on the reaches, keeping the best plan.

    Starts from the greedy plan, so the returned future reach never accepts less than specinfer.
    Returns future_reach [k, ...].
    """
    best_future = greedy_future(target_probs, num_candidates)
    reaches = run_plan(target_probs, draft_probs, best_future).reaches
    best_accept = 1 - reaches[-1]
    smoothed = reaches
    done = torch.zeros_like(best_accept, dtype=torch.bool)  # [...]: converged rows stay frozen
    for _ in range(iterations):
        future = future_from_reach(smoothed)
        new_reaches = run_plan(target_probs, draft_probs, future).reaches
        accept = 1 - new_reaches[-1]
        better = (accept > best_accept) & ~done
        best_future = torch.where(better, future, best_future)
        best_accept = torch.where(better, accept, best_accept)
        done = done | ((new_reaches - smoothed).abs().amax(0) < tol)
        if bool(done.all()):
            break
        smoothed = torch.where(done, smoothed, damping * smoothed + (1 - damping) * new_reaches)
    return best_future


def ratio_bins(
    target_probs: torch.Tensor, draft_probs: torch.Tensor, bins: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Aggregate tokens into ``bins`` log-spaced bins of p/q: (target [..., bins], draft [..., bins]).

    Plans are positively homogeneous per token (c scales with (M, q) jointly), so tokens with equal p/q
    aggregate exactly and binning is a close, cheap proxy for planning (any plan stays exact).
    """
    tiny = torch.finfo(target_probs.dtype).tiny
    log_ratio = torch.log(target_probs.clamp_min(tiny) / draft_probs.clamp_min(tiny))  # [..., V]
    # bins of width 24 / (bins - 2) over log ratios in [-12, 12], plus one bin on each side
    scaled = ((log_ratio + 12.0) * ((bins - 2) / 24.0)).floor_().clamp_(-1, bins - 2)
    index = scaled.long() + 1  # [..., V] in 0..bins-1 (cheaper than torch.bucketize on a CPU)
    target_bins = target_probs.new_zeros(target_probs.shape[:-1] + (bins,)).scatter_add_(
        -1, index, target_probs
    )
    draft_bins = draft_probs.new_zeros(draft_probs.shape[:-1] + (bins,)).scatter_add_(-1, index, draft_probs)
    return target_bins, draft_bins


def plan_ers_small(
    target_probs: np.ndarray,
    draft_probs: np.ndarray,
    num_candidates: int,
    *,
    iterations: int = DEFAULT_ITERATIONS,
    damping: float = DEFAULT_DAMPING,
    tol: float = DEFAULT_TOL,
) -> np.ndarray:
    """``plan_ers`` for one small 1-D problem (ratio bins) in numpy: same algorithm, ~6x less overhead."""

    def reaches_of(future):
        residual, reach, out = target_probs, target_probs.sum(), [target_probs.sum()]
        for step in range(num_candidates):
            deferred = np.maximum(residual - draft_probs * future[step], 0)
            residual = np.maximum(residual - np.minimum(reach * draft_probs, deferred), 0)
            reach = residual.sum()
            out.append(reach)
        return np.array(out)

    def future_of(reaches):
        return np.append(reaches[1:-1][::-1].cumsum()[::-1], 0.0)

    best_future = np.zeros(num_candidates)
    smoothed = reaches_of(best_future)
    best_accept = 1 - smoothed[-1]
    for _ in range(iterations):
        future = future_of(smoothed)
        new_reaches = reaches_of(future)
        if 1 - new_reaches[-1] > best_accept:
            best_future, best_accept = future, 1 - new_reaches[-1]
        if np.abs(new_reaches - smoothed).max() < tol:
            break
        smoothed = damping * smoothed + (1 - damping) * new_reaches
    return best_future


def future_for(method: str, target_probs: torch.Tensor, draft_probs: torch.Tensor, k: int, **options):
    """The plan's future reach [k, ...] for ``specinfer`` (greedy) or ``ers``."""
    if method == "specinfer":
        if options:
            raise ValueError(f"specinfer takes no options, got {sorted(options)}")
        return greedy_future(target_probs, k)
    if method == "ers":
        unknown = set(options) - {"iterations", "damping", "tol", "bins"}
        if unknown:
            raise ValueError(f"unknown ers options {sorted(unknown)} (known: iterations, damping, tol, bins)")
        options = dict(options)
        bins = options.pop("bins", DEFAULT_BINS)
        dtype = target_probs.dtype
        if bins is not None and bins < target_probs.shape[-1]:
            target_probs, draft_probs = ratio_bins(target_probs, draft_probs, bins)
        if target_probs.ndim == 1:
            small = plan_ers_small(
                target_probs.double().cpu().numpy(), draft_probs.double().cpu().numpy(), k, **options
            )
            return torch.from_numpy(small).to(device=target_probs.device, dtype=dtype)
        return plan_ers(target_probs, draft_probs, k, **options).to(dtype)
    raise ValueError(f"method {method!r} is not a with-replacement sequential plan")


def sequential_law(method, target_probs, draft_probs, num_candidates, **options):
    """Exact output law sum_i c_i + M_{k+1} [..., V] and acceptance 1 - R_{k+1} [...] (float64 inputs)."""
    future = future_for(method, target_probs, draft_probs, num_candidates, **options)
    accepted, reaches, residual = run_plan(target_probs, draft_probs, future)
    return accepted.sum(0) + residual, 1 - reaches[-1]


# The batched acceptance chain (rows.py) and ers's batched planning.


def sequential_chain(target, draft, candidates, valid, future, tick):
    """specinfer (future None: T = 0) and ers (future [B, k]): c_i = min(R_i q, (M_i - q T_{i+1})^+),
    candidate i accepted with probability c_i(x_i) / (R_i q(x_i))."""
    residual, reach, probs = target, target.sum(-1), []  # [B, V], [B]
    for i in range(candidates.shape[1]):
        token, step_future = candidates[:, i], (0 if future is None else future[:, i])
        at = token.unsqueeze(-1)  # [B, 1]: c_i(x_i) first, the full c_i [B, V] only for the residual
        mass_at = plan_step(residual.gather(-1, at), reach, draft.gather(-1, at), step_future)[:, 0]
        probs.append(ratio(mass_at, reach * value_at(draft, token)))
        tick("proxy")
        mass = plan_step(residual, reach, draft, step_future)  # [B, V]
        residual = torch.where(valid[:, i, None], (residual - mass).clamp_min(0), residual)
        reach = residual.sum(-1)
        tick("redistribution")
    return probs, residual


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
    options, tick = get_method("ers").check_options(options), tick or no_tick
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


def specinfer_chain(target, draft, candidates, valid, options, tick):
    """specinfer's chain: the greedy plan (future reach T = 0)."""
    return sequential_chain(target, draft, candidates, valid, None, tick)


def ers_chain(target, draft, candidates, valid, options, tick):
    """ers's chain: the future reach planned per row (``plan_ers_rows``)."""
    future = plan_ers_rows(target, draft, valid, options, tick)
    return sequential_chain(target, draft, candidates, valid, future, tick)


# The per-node samplers.


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


# The registry objects.


class SequentialMethod(Chained):
    """A with-replacement plan c_i = min(R_i q, (M_i - q T_{i+1})^+) (sequential.py)."""

    def law(self, target_probs, draft_probs, k, **options):
        return sequential_law(self.name, target_probs, draft_probs, k, **options)


class SpecInfer(SequentialMethod):
    """SpecInfer's multi-round rejection sampling: the greedy plan, candidates i.i.d. from q."""

    name, exact, draws = "specinfer", True, "with_replacement"
    depends_on_k, host_verifier = False, True
    variants = {False: "sequoia"}
    chain = staticmethod(specinfer_chain)
    sampler = SpecInferVerifier


class ERS(SequentialMethod):
    """Shaped residuals: the plan's future reach T chosen by fixed-point iterations (sequential.py)."""

    name, exact, draws, shaping = "ers", True, "with_replacement", True
    every_run = True
    options = {
        "iterations": DEFAULT_ITERATIONS,
        "damping": DEFAULT_DAMPING,
        "tol": DEFAULT_TOL,
        "bins": DEFAULT_BINS,
    }
    chain = staticmethod(ers_chain)
    sampler = ERSVerifier
