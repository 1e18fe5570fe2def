"""The exact sequential family with replacement (spec sections 2 and 4): plans, laws, acceptance.

A plan is a per-step rule ``plan_step`` giving accepted masses c_i(v). ``specinfer`` is the greedy plan
(future reach T = 0), ``ers`` uses the planned future reach T_{i+1} = sum_{j>i} R_j. The samplers in
``samplers.py`` call the very same ``plan_step`` with the same T, so laws and samplers agree.
All functions broadcast over leading batch dimensions: tensors are [..., V], reaches [...].
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

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
