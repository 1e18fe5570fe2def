"""Input validation shared by every verifier (ValueErrors that name the problem)."""

from __future__ import annotations

import torch

NORM_TOL = 1e-3  # tolerance on |sum - 1|: float16/bfloat16 vocab-sized vectors round to ~1e-3


def check_probs(name: str, probs: object, *, tol: float = NORM_TOL, batched: bool = False) -> None:
    """Raise ValueError unless ``probs`` is a finite, non-negative, normalised float tensor [..., V]."""
    if not isinstance(probs, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(probs).__name__}")
    if not batched and probs.ndim != 1:
        raise ValueError(f"{name} must be 1-D [V], got shape {tuple(probs.shape)}")
    if probs.ndim < 1 or probs.shape[-1] == 0:
        raise ValueError(f"{name} is empty (shape {tuple(probs.shape)})")
    if not probs.is_floating_point():
        raise ValueError(f"{name} must be a floating tensor, got dtype {probs.dtype}")
    if torch.isnan(probs).any():
        raise ValueError(f"{name} contains NaN")
    if torch.isinf(probs).any():
        raise ValueError(f"{name} contains inf")
    if (probs < 0).any():
        raise ValueError(f"{name} has negative entries (min={probs.min().item():.3g})")
    sums = probs.double().sum(-1)
    worst = (sums - 1).abs().argmax()
    if (sums - 1).abs().flatten()[worst] > tol:
        raise ValueError(f"{name} is not normalised (sum={sums.flatten()[worst].item():.6g})")


def check_pair(target_probs: object, draft_probs: object, *, batched: bool = False) -> None:
    """Validate both vectors and their shapes."""
    check_probs("target_probs", target_probs, batched=batched)
    check_probs("draft_probs", draft_probs, batched=batched)
    if target_probs.shape != draft_probs.shape:
        raise ValueError(
            f"target_probs and draft_probs shapes differ: {tuple(target_probs.shape)} vs "
            f"{tuple(draft_probs.shape)}"
        )


def check_num_candidates(num_candidates: object) -> int:
    """num_candidates must be an int >= 1."""
    if isinstance(num_candidates, bool) or not isinstance(num_candidates, int):
        raise ValueError(f"num_candidates must be an int, got {type(num_candidates).__name__}")
    if num_candidates < 1:
        raise ValueError(f"num_candidates must be >= 1, got {num_candidates}")
    return num_candidates


def check_candidates(candidates: object, vocab_size: int) -> None:
    """candidates must be a 1-D integer tensor of token ids in [0, V)."""
    if not isinstance(candidates, torch.Tensor):
        raise ValueError(f"candidates must be a torch.Tensor, got {type(candidates).__name__}")
    if candidates.ndim != 1:
        raise ValueError(f"candidates must be 1-D [k], got shape {tuple(candidates.shape)}")
    if candidates.is_floating_point() or candidates.dtype == torch.bool:
        raise ValueError(f"candidates must be an integer tensor, got dtype {candidates.dtype}")
    if candidates.numel() and (candidates.min() < 0 or candidates.max() >= vocab_size):
        raise ValueError(f"candidates hold token ids outside [0, {vocab_size}): {candidates.tolist()}")


def as_float64(target_probs: torch.Tensor, draft_probs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Float64 copies renormalised to sum exactly-ish 1 (removes the tolerated rounding)."""
    target = target_probs.double()
    draft = draft_probs.double()
    return target / target.sum(-1, keepdim=True), draft / draft.sum(-1, keepdim=True)


def working_dtype(tensor: torch.Tensor) -> torch.dtype:
    """Samplers compute in float32 at least (half precision is promoted)."""
    return torch.float64 if tensor.dtype == torch.float64 else torch.float32
