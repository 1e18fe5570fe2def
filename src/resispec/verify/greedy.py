"""Verifiers whose candidates are the fixed top-k of q: ``greedy`` (T = 0) and ``deterministic`` (EAGLE-2).

Their "law" is defined given those fixed candidates (top-k of draft_probs, ties broken by torch.topk):
- ``deterministic``: accept x_i with probability M_i(x_i) / R_i, the residual removes x_i (the exact plan
  with a one-hot q_i). The law is exactly target_probs; acceptance is target_probs(top-k of q).
- ``greedy``: the emitted token is argmax target_probs whatever the candidates, so the law is the one-hot
  of that argmax (equal to target_probs when the target is already one-hot, i.e. processed at T = 0);
  acceptance is 1 when that argmax is among the top-k of q, else 0.
Each has its law, its per-node sampler, its batched rows and its registry object (``Deterministic``,
``Greedy``) here.
"""

from __future__ import annotations

import torch

from .method_base import BuiltIn, Chained
from .rows import BatchOutcome, first_hit, ratio, value_at, zero_at
from .samplers import Verifier, VerifyOutcome, draw, uniform


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


def deterministic_chain(target, draft, candidates, valid, options, tick):
    """EAGLE-2's fixed drafts: accept x_i with probability M_i(x_i) / R_i, then remove x_i."""
    residual, reach, probs = target, target.sum(-1), []
    for i in range(candidates.shape[1]):
        token = candidates[:, i]
        probs.append(ratio(value_at(residual, token), reach))
        residual = torch.where(valid[:, i, None], zero_at(residual, token), residual)
        reach = residual.sum(-1)
    return probs, residual


def greedy_rows(target, draft, candidates, valid, generator) -> BatchOutcome:
    """T = 0: the token is argmax p; x_i is accepted iff it is that token (first such position)."""
    token = target.argmax(-1)  # [B]
    match = (candidates == token.unsqueeze(-1)) & valid  # [B, k]
    return BatchOutcome(first_hit(match), token)


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


class Deterministic(Chained):
    """EAGLE-2's verification of fixed drafts, the top-k of q (greedy.py)."""

    name, exact, draws = "deterministic", True, "deterministic"
    depends_on_k, host_verifier = False, True
    chain = staticmethod(deterministic_chain)
    sampler = DeterministicVerifier
    law_of = staticmethod(deterministic_law)


class Greedy(BuiltIn):
    """Temperature 0: the emitted token is argmax p, a candidate is accepted iff it is that token."""

    name, exact, draws, temperature_zero = "greedy", False, "greedy", True
    depends_on_k, host_verifier = False, True
    sampler = GreedyVerifier
    law_of = staticmethod(greedy_law)

    def verify_rows(self, target_rows, draft_rows, candidates, valid, generator, options, tick, host_plan):
        return greedy_rows(target_rows, draft_rows, candidates, valid, generator)
