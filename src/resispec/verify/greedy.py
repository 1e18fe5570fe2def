"""Verifiers whose candidates are the fixed top-k of q: ``greedy`` (T = 0) and ``deterministic`` (EAGLE-2).

Their "law" is defined given those fixed candidates (top-k of draft_probs, ties broken by torch.topk):
- ``deterministic``: accept x_i with probability M_i(x_i) / R_i, the residual removes x_i (the exact plan
  with a one-hot q_i). The law is exactly target_probs; acceptance is target_probs(top-k of q).
- ``greedy``: the emitted token is argmax target_probs whatever the candidates, so the law is the one-hot
  of that argmax (equal to target_probs when the target is already one-hot, i.e. processed at T = 0);
  acceptance is 1 when that argmax is among the top-k of q, else 0.
"""

from __future__ import annotations

import torch


def top_candidates(draft_probs: torch.Tensor, num_candidates: int) -> torch.Tensor:
    """The k candidates a deterministic drafter proposes: top-k of q, [min(k, V)]."""
    return torch.topk(draft_probs, min(num_candidates, draft_probs.shape[-1])).indices


def deterministic_step(residual: torch.Tensor, token: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Accepted mass c_i(x) = M_i(x) (q_i one-hot at x) and the next residual M_i with x removed."""
    mass = residual[token]
    nxt = residual.clone()
    nxt[token] = 0
    return mass, nxt


def deterministic_law(target_probs, draft_probs, num_candidates):
    """(law [V], acceptance) for fixed top-k candidates of q."""
    residual = target_probs
    law = torch.zeros_like(target_probs)
    for token in top_candidates(draft_probs, num_candidates).tolist():
        mass, residual = deterministic_step(residual, token)
        law[token] += mass
    return law + residual, 1 - residual.sum()


def greedy_law(target_probs, draft_probs, num_candidates):
    """(law [V], acceptance): one-hot argmax of p; accepted iff it is a top-k token of q."""
    token = int(torch.argmax(target_probs))
    law = torch.zeros_like(target_probs)
    law[token] = 1
    hit = bool((top_candidates(draft_probs, num_candidates) == token).any())
    return law, torch.tensor(float(hit), dtype=target_probs.dtype)
