"""Exact laws by recursion over rejection histories (spec section 7), batched over histories.

A history h is the ordered list of rejected tokens. Its state is the normalised residual target
``residual`` [H, V], the law the next candidate is drawn from ``draft`` [H, V] and its probability
``prob`` [H]. Both ``sequoia`` and ``resispec`` accept a candidate x with probability
min(1, residual(x) / draft(x)), so a step contributes prob * min(residual, draft) to the law and branches
on each rejected x with probability prob * (draft(x) - min(residual(x), draft(x))).
The family supplies ``transition(residual, draft, accepted, rows, tokens) -> (residual, draft)``.

Pruning (certified): branches are dropped lowest-probability first while the dropped mass stays within
``eps / k`` per step, and beyond ``max_histories`` survivors; the dropped probability mass is returned as
``err``: the returned law is then a sub-probability with law <= true law and sum(true - law) = err.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

from .results import LawResult


class Branches(NamedTuple):
    """Kept branches of a history step: history rows, rejected tokens, probabilities; dropped mass."""

    rows: torch.Tensor  # [B]
    tokens: torch.Tensor  # [B]
    probs: torch.Tensor  # [B]
    dropped: float


def _select_branches(branch: torch.Tensor, eps_step: float, max_histories: int):
    """Choose (rows, tokens, probs) of branches to keep from branch probs [H, V]; also the dropped mass."""
    flat = branch.flatten()
    positive = torch.nonzero(flat > 0).squeeze(-1)
    values = flat[positive]
    order = torch.argsort(values)  # ascending
    values, positive = values[order], positive[order]
    dropped_cum = values.cumsum(0)
    n_drop = int((dropped_cum <= eps_step).sum()) if eps_step > 0 else 0
    n_drop = max(n_drop, values.numel() - max_histories)
    dropped = float(dropped_cum[n_drop - 1]) if n_drop > 0 else 0.0
    keep = positive[n_drop:]
    vocab = branch.shape[-1]
    return Branches(keep // vocab, keep % vocab, values[n_drop:], dropped)


def history_law(
    target_probs: torch.Tensor,
    draft_probs: torch.Tensor,
    num_candidates: int,
    transition: Callable,
    *,
    final_residual: Callable | None = None,
    eps: float = 0.0,
    max_histories: int | None = None,
) -> LawResult:
    """Law [V], acceptance (scalar tensor) and certified error for a history-dependent verifier.

    ``final_residual(residual, draft, accepted) -> residual`` may be given when the residual after the
    k-th rejection does not depend on the rejected token (sequoia): the last step then needs no branching.
    """
    vocab = target_probs.shape[-1]
    if max_histories is None:
        max_histories = max(64, 2**24 // vocab)  # keeps the [H, V] float64 state near 128 MiB
    residual, draft = target_probs.unsqueeze(0), draft_probs.unsqueeze(0)  # [1, V]
    prob = target_probs.new_ones(1)  # [H]
    law = torch.zeros_like(target_probs)
    acceptance = torch.zeros((), dtype=target_probs.dtype)
    err = 0.0
    for step in range(num_candidates):
        accepted = torch.minimum(residual, draft)  # [H, V]
        law += (prob.unsqueeze(-1) * accepted).sum(0)
        acceptance += (prob * accepted.sum(-1)).sum()
        if step == num_candidates - 1 and final_residual is not None:
            reject = prob * (1 - accepted.sum(-1)).clamp_min(0)  # [H]
            law += (reject.unsqueeze(-1) * final_residual(residual, draft, accepted)).sum(0)
            return LawResult(law, float(acceptance), err)
        # a history whose draft law is exhausted (k > support of q without replacement) draws no
        # further candidate: it emits from its residual now
        exhausted = (draft.sum(-1) <= 0).to(prob.dtype)  # [H] or [1]
        law += ((prob * exhausted).unsqueeze(-1) * residual).sum(0)
        branch = prob.unsqueeze(-1) * (draft - accepted)  # [H, V]
        rows, tokens, probs, dropped = _select_branches(branch, eps / num_candidates, max_histories)
        err += dropped
        if rows.numel() == 0:
            return LawResult(law, float(acceptance), err)
        residual, draft = transition(residual, draft, accepted, rows, tokens)
        prob = probs
    # after the k-th rejection the token is drawn from the residual of each surviving history
    law += (prob.unsqueeze(-1) * residual).sum(0)
    return LawResult(law, float(acceptance), err)


def check_exact(err: float, method: str) -> None:
    """output_law promises an exact law: refuse when the recursion had to prune."""
    if err > 0:
        raise ValueError(
            f"{method}: exact recursion over rejection histories exceeded max_histories (pruned mass "
            f"{err:.3g}); use output_law_with_bound(..., eps=...) (certified) or estimate(...) (sampled)"
        )


def sampled_history_law(
    target_probs: torch.Tensor,
    draft_probs: torch.Tensor,
    num_candidates: int,
    transition: Callable,
    *,
    paths: int,
    generator: torch.Generator,
    final_residual: Callable | None = None,
) -> LawResult:
    """Unbiased estimate of (law [V], acceptance) with the acceptance's standard error.

    Rao-Blackwellised recursion: ``paths`` rejection histories are sampled, each conditionally on being
    rejected at every step (token x with probability proportional to draft(x) - accepted(x)), and weighted
    by their probability of being rejected so far; every step's acceptance is added exactly. The expected
    value of the estimate is the exact recursion of ``history_law``.
    """
    residual = target_probs.unsqueeze(0).expand(paths, -1)  # [N, V]
    draft = draft_probs.unsqueeze(0).expand(paths, -1)  # [N, V]
    weight = target_probs.new_ones(paths)  # [N]
    law = torch.zeros_like(target_probs)
    accept = target_probs.new_zeros(paths)  # per-path acceptance estimate
    for step in range(num_candidates):
        accepted = torch.minimum(residual, draft)  # [N, V]
        law += (weight.unsqueeze(-1) * accepted).sum(0) / paths
        accept += weight * accepted.sum(-1)
        exhausted = (draft.sum(-1) <= 0).to(weight.dtype)
        law += ((weight * exhausted).unsqueeze(-1) * residual).sum(0) / paths
        branch = (draft - accepted).clamp_min(0)  # [N, V]
        reject = branch.sum(-1)  # [N]
        if step == num_candidates - 1 and final_residual is not None:
            law += ((weight * reject).unsqueeze(-1) * final_residual(residual, draft, accepted)).sum(
                0
            ) / paths
            return _sampled_result(law, accept, paths)
        alive = reject > 0
        safe = torch.where(alive.unsqueeze(-1), branch, torch.ones_like(branch))
        tokens = torch.multinomial(safe, 1, generator=generator).squeeze(-1)  # [N]
        rows = torch.arange(paths, device=residual.device)
        residual, draft = transition(residual, draft, accepted, rows, tokens)
        weight = weight * reject * alive.to(weight.dtype)
    law += (weight.unsqueeze(-1) * residual).sum(0) / paths
    return _sampled_result(law, accept, paths)


def _sampled_result(law: torch.Tensor, accept: torch.Tensor, paths: int) -> LawResult:
    """Unbiased law and acceptance of sampled histories; err is the acceptance's standard error."""
    stderr = float(accept.std() / paths**0.5) if paths > 1 else 0.0
    return LawResult(law, float(accept.mean()), stderr)
