"""``resispec``: the paper's Algorithm 1 as printed (spec section 5). NOT in the exact family.

After rejecting x (only possible when q(x) > R(x)) the residual becomes r / Z where
    budgeting:       Z = q(x) - R(x)                    (budget="local"; "global": Z = sum (q - R)_+)
    redistribution:  r_x = 0, r_v = min(Z q(v), R(v)), then the deficit Z - sum r is filled over v != x
                     in ``order`` ("decreasing_q" as printed, "increasing_q", "index"), each up to R(v) - r_v
    proxy:           K = R - r + Z e_x and R <- (R - K)_+ / sum (R - K)_+ = r / sum r.
The step functions are batched over rejected tokens: residual [B, V], draft [B or 1, V], tokens [B].
The per-node sampler (``ResiSpecVerifier``) and the batched chain (``resispec_chain``) run them; the
law recurses over rejection histories; ``ResiSpec`` is the method's registry object.
"""

from __future__ import annotations

import time

import torch

from .histories import history_law, sampled_history_law
from .method_base import HistoryLaw
from .rows import ratio, value_at
from .samplers import Verifier, VerifyOutcome, draw, uniform

BUDGETS = ("local", "global")
ORDERS = ("decreasing_q", "increasing_q", "index")
# The fill order is needed only until the deficit is filled: a top-k prefix of this many tokens (ties
# included) replaces the full sort of the vocabulary, with the full sort as the fallback
FILL_PREFIX = 64


def check_options(budget: str, order: str) -> None:
    if budget not in BUDGETS:
        raise ValueError(f"resispec budget must be one of {BUDGETS}, got {budget!r}")
    if order not in ORDERS:
        raise ValueError(f"resispec order must be one of {ORDERS}, got {order!r}")


def fill_order(draft_probs: torch.Tensor, order: str) -> torch.Tensor:
    """Permutation [V] of the vocabulary in which the deficit is filled."""
    if order == "decreasing_q":
        return torch.argsort(draft_probs, descending=True, stable=True)
    if order == "increasing_q":
        return torch.argsort(draft_probs, stable=True)
    return torch.arange(draft_probs.shape[-1], device=draft_probs.device)


def budget_mass(
    residual: torch.Tensor, draft: torch.Tensor, tokens: torch.Tensor, budget: str
) -> torch.Tensor:
    """Z [B] for each rejected token."""
    rows = torch.arange(residual.shape[0], device=residual.device)
    if budget == "local":
        return (draft.expand_as(residual)[rows, tokens] - residual[rows, tokens]).clamp_min(0)
    return (draft - residual).clamp_min(0).sum(-1)


def redistribute(residual, draft, tokens, budget_z, perm):
    """r [B, V]: proportional part min(Z q, R) off x, then the deficit filled in ``perm`` order."""
    share, capacity, deficit = _proportional_part(residual, draft, tokens, budget_z)
    return _fill(share, capacity, deficit, perm)


def redistribute_rows(residual, draft, tokens, budget_z, perms):
    """``redistribute`` with one fill order per row: perms long [B, V] (the batched verifier's rows have
    different drafts); r [B, V]."""
    share, capacity, deficit = _proportional_part(residual, draft, tokens, budget_z)
    cap_sorted = capacity.gather(-1, perms)  # [B, V]
    before = cap_sorted.cumsum(-1) - cap_sorted
    fill_sorted = torch.minimum(cap_sorted, (deficit.unsqueeze(-1) - before).clamp_min(0))
    return share + torch.zeros_like(share).scatter_(-1, perms, fill_sorted)


def redistribute_prefix(residual, draft, tokens, budget_z, prefix):
    """``redistribute`` when the deficit can be filled within ``prefix`` [M] (the first M entries of the
    fill order): the same r [B, V] without touching the rest of the order, else None."""
    share, capacity, deficit = _proportional_part(residual, draft, tokens, budget_z)
    if bool((capacity[:, prefix].sum(-1) < deficit).any()):
        return None
    return _fill(share, capacity, deficit, prefix)


def fill_prefix(draft_probs: torch.Tensor, size: int) -> torch.Tensor:
    """The first >= ``size`` entries of ``fill_order(draft_probs, "decreasing_q")`` [M] (every token tied
    with the size-th largest q included, ties in token order as the stable full sort puts them)."""
    if size >= draft_probs.shape[-1]:
        return fill_order(draft_probs, "decreasing_q")
    threshold = draft_probs.topk(size).values[-1]
    chosen = torch.nonzero(draft_probs >= threshold).squeeze(-1)  # [M], ascending ids
    return chosen[torch.argsort(draft_probs[chosen], descending=True, stable=True)]


def _proportional_part(residual, draft, tokens, budget_z):
    """min(Z q, R) off the rejected token [B, V], the capacity left for the fill [B, V], deficit [B]."""
    rows = torch.arange(residual.shape[0], device=residual.device)
    share = torch.minimum(budget_z.unsqueeze(-1) * draft, residual)  # [B, V]
    share[rows, tokens] = 0
    deficit = (budget_z - share.sum(-1)).clamp_min(0)  # [B]
    capacity = residual - share
    capacity[rows, tokens] = 0
    return share, capacity, deficit


def _fill(share, capacity, deficit, perm):
    """share + the deficit filled greedily in ``perm`` order, each token up to its capacity."""
    cap_sorted = capacity[:, perm]  # [B, M]
    before = cap_sorted.cumsum(-1) - cap_sorted
    fill_sorted = torch.minimum(cap_sorted, (deficit.unsqueeze(-1) - before).clamp_min(0))
    fill = torch.zeros_like(share)
    fill[:, perm] = fill_sorted
    return share + fill


def proxy_residual(residual, tokens, budget_z, share):
    """K = R - r + Z e_x; new residual (R - K)_+ normalised; [B, V]."""
    rows = torch.arange(residual.shape[0], device=residual.device)
    proxy = residual - share
    proxy[rows, tokens] += budget_z
    new = (residual - proxy).clamp_min(0)
    return new / new.sum(-1, keepdim=True).clamp_min(torch.finfo(new.dtype).tiny)


def resispec_residual(residual, draft, tokens, *, budget="local", perm=None, order="decreasing_q"):
    """The residual after rejecting tokens[b] from residual[b]; [B, V]."""
    if perm is None:
        perm = fill_order(draft.reshape(-1, draft.shape[-1])[0], order)
    budget_z = budget_mass(residual, draft, tokens, budget)
    share = redistribute(residual, draft, tokens, budget_z, perm)
    return proxy_residual(residual, tokens, budget_z, share)


def _transition_for(budget: str, order: str, draft_probs: torch.Tensor):
    check_options(budget, order)
    perm = fill_order(draft_probs, order)

    def transition(residual, draft, accepted, rows, tokens):
        new = resispec_residual(residual[rows], draft, tokens, budget=budget, perm=perm)
        return new, draft  # the draft stays the original q

    return transition


def resispec_law(
    target_probs,
    draft_probs,
    num_candidates,
    *,
    budget="local",
    order="decreasing_q",
    eps=0.0,
    max_histories=None,
):
    """(law [V], acceptance, err) of the printed algorithm by recursion over rejection histories."""
    transition = _transition_for(budget, order, draft_probs)
    return history_law(
        target_probs, draft_probs, num_candidates, transition, eps=eps, max_histories=max_histories
    )


def resispec_estimate(
    target_probs, draft_probs, num_candidates, *, paths, generator, budget="local", order="decreasing_q"
):
    """Unbiased (law [V], acceptance, stderr) from sampled rejection histories."""
    transition = _transition_for(budget, order, draft_probs)
    return sampled_history_law(
        target_probs, draft_probs, num_candidates, transition, paths=paths, generator=generator
    )


def resispec_chain(target, draft, candidates, valid, options, tick):
    """The printed Algorithm 1 (``resispec.py``), one fill order (a sort of q) per row."""
    budget = options.get("budget", "local")
    order = options.get("order", "decreasing_q")
    check_options(budget, order)
    if order == "index":
        perms = torch.arange(draft.shape[-1], device=draft.device).expand_as(draft)
    else:
        perms = fill_order(draft, order)  # [B, V]
    tick("redistribution")
    residual, probs = target, []
    for i in range(candidates.shape[1]):
        token, active = candidates[:, i], valid[:, i, None]
        draft_at = value_at(draft, token)
        probs.append(ratio(torch.minimum(value_at(residual, token), draft_at), draft_at))
        tick("proxy")
        budget_z = budget_mass(residual, draft, token, budget)  # [B]
        tick("budgeting")
        share = redistribute_rows(residual, draft, token, budget_z, perms)
        tick("redistribution")
        new = proxy_residual(residual, token, budget_z, share)
        residual = torch.where(active, new, residual)
        tick("proxy")
    return probs, residual


class ResiSpecVerifier(Verifier):
    """The paper's Algorithm 1 as printed (not exact; see resispec.py)."""

    method = "resispec"
    draws = "with_replacement"

    def __init__(self, *, validate: bool = True, **options):
        super().__init__(validate=validate, **options)
        self.budget = options.get("budget", "local")
        self.order = options.get("order", "decreasing_q")
        check_options(self.budget, self.order)
        self._order_of: tuple[torch.Tensor, int, torch.Tensor] | None = None  # (draft, version, perm)

    def _fill_order(self, draft: torch.Tensor) -> torch.Tensor:
        """The fill order [V] (a sort of q) of the last draft seen, reused while the same tensor comes back
        unchanged (version counter), as when the audit's Monte Carlo check verifies one node many times."""
        cached = self._order_of
        if cached is not None and cached[0] is draft and cached[1] == draft._version:
            return cached[2]
        perm = fill_order(draft, self.order)
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
            budget_z = budget_mass(residual, draft, tokens, self.budget)
            start = self._tick("budgeting", start)
            share = None
            if self.order == "decreasing_q":  # the deficit is almost always filled by the top-q tokens
                if prefix is None:
                    prefix = fill_prefix(draft, FILL_PREFIX)
                share = redistribute_prefix(residual, draft, tokens, budget_z, prefix)
            if share is None:
                if perm is None:
                    perm = self._fill_order(draft)
                share = redistribute(residual, draft, tokens, budget_z, perm)
            start = self._tick("redistribution", start)
            residual = proxy_residual(residual, tokens, budget_z, share)
            start = self._tick("proxy", start)
        token = draw(residual[0], generator, target)
        self._tick("proxy", start)
        return VerifyOutcome(None, token)


class ResiSpec(HistoryLaw):
    """The paper's Algorithm 1 as printed: not exact."""

    name, exact, draws, shaping = "resispec", False, "with_replacement", True
    depends_on_k = False
    options = {"budget": "local", "order": "decreasing_q"}
    chain = staticmethod(resispec_chain)
    sampler = ResiSpecVerifier
    history_law = staticmethod(resispec_law)
    history_estimate = staticmethod(resispec_estimate)
