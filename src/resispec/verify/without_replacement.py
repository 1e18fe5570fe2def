"""``sequoia``: recursive rejection sampling without replacement (greedy plan with q_i = q minus drawn).

The residual after a rejection does not depend on which token was rejected, but the next draft law does,
so the exact law needs the recursion over rejection histories of ``histories.py``. The per-node
sampler (``SequoiaVerifier``) and the batched chain (``sequoia_chain``) run the same steps
(``sequoia_accepted``, ``sequoia_next_residual``); ``Sequoia`` is the method's registry object.
"""

from __future__ import annotations

import torch

from .histories import history_law, sampled_history_law
from .method_base import HistoryLaw
from .rows import ratio, value_at, zero_at
from .samplers import Verifier, VerifyOutcome, draw, uniform
from .sequential import plan_step


def normalise(measure: torch.Tensor) -> torch.Tensor:
    """measure / sum over the last axis; an all-zero row stays zero."""
    total = measure.sum(-1, keepdim=True)
    return torch.where(total > 0, measure / total.clamp_min(torch.finfo(measure.dtype).tiny), measure)


def remove_tokens(draft_probs: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """q_{i+1}: draft [B, V] with token tokens[b] removed from row b, renormalised; [B, V]."""
    removed = draft_probs.clone()
    removed[torch.arange(removed.shape[0], device=removed.device), tokens] = 0
    return normalise(removed)


def sequoia_accepted(residual: torch.Tensor, draft_probs: torch.Tensor) -> torch.Tensor:
    """Greedy accepted mass min(residual, q_i) for normalised residuals [..., V] (reach 1)."""
    return plan_step(residual, residual.new_ones(residual.shape[:-1]), draft_probs, 0)


def sequoia_next_residual(residual: torch.Tensor, accepted: torch.Tensor) -> torch.Tensor:
    """Residual after a rejection: norm(max(residual - q_i, 0)) = norm(residual - accepted)."""
    return normalise((residual - accepted).clamp_min(0))


def _transition(residual, draft, accepted, rows, tokens):
    next_residual = sequoia_next_residual(residual, accepted)  # [H, V]
    return next_residual[rows], remove_tokens(draft[rows], tokens)


def _final_residual(residual, draft, accepted):
    return sequoia_next_residual(residual, accepted)


def sequoia_law(target_probs, draft_probs, num_candidates, *, eps=0.0, max_histories=None):
    """(law [V], acceptance, err) of sequoia by recursion over rejection histories."""
    return history_law(
        target_probs,
        draft_probs,
        num_candidates,
        _transition,
        final_residual=_final_residual,
        eps=eps,
        max_histories=max_histories,
    )


def sequoia_estimate(target_probs, draft_probs, num_candidates, *, paths, generator):
    """Unbiased (law [V], acceptance, stderr) from sampled rejection histories."""
    return sampled_history_law(
        target_probs,
        draft_probs,
        num_candidates,
        _transition,
        paths=paths,
        generator=generator,
        final_residual=_final_residual,
    )


def sequoia_chain(target, draft, candidates, valid, options, tick):
    """Recursive rejection sampling without replacement: q_i is q with x_1..x_{i-1} removed."""
    residual, current, probs = target, draft, []
    for i in range(candidates.shape[1]):
        token, active = candidates[:, i], valid[:, i, None]
        accepted_mass = sequoia_accepted(residual, current)  # [B, V]
        probs.append(ratio(value_at(accepted_mass, token), value_at(current, token)))
        residual = torch.where(active, sequoia_next_residual(residual, accepted_mass), residual)
        current = torch.where(active, normalise(zero_at(current, token)), current)
    return probs, residual


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


class Sequoia(HistoryLaw):
    """Recursive rejection sampling without replacement (without_replacement.py)."""

    name, exact, draws = "sequoia", True, "without_replacement"
    depends_on_k, host_verifier = False, True
    variants = {True: "specinfer"}
    chain = staticmethod(sequoia_chain)
    sampler = SequoiaVerifier
    history_law = staticmethod(sequoia_law)
    history_estimate = staticmethod(sequoia_estimate)
