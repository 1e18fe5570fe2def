"""A verification method of one's own, in one file: ``first_candidate``.

It verifies only the first of a node's k candidates, with the single-draft speculative sampling rule
(Leviathan et al., 2023; Chen et al., 2023): candidate x ~ q is accepted with probability
min(1, p(x) / q(x)); otherwise the token is drawn from the residual (p - q)^+ (normalised). Every
other candidate is ignored. It is exact, and its acceptance is sum_x min(p(x), q(x)) = 1 - TV(p, q),
which is alpha* for k = 1 and below alpha* for k > 1: the baseline any multi-candidate method should beat.

Use it (README, "Your own verifier"):

    import my_verifiers  # registers "first_candidate"
    from resispec import generate
    out = generate(target, draft, ids, method="first_candidate")

    from resispec.verify import certify
    print(certify("first_candidate"))  # exact, sampler matches its law, never above alpha*

or name it in a workflow config: ``plugins: [examples/my_verifiers.py]`` and ``methods`` in a sheet.
"""

from __future__ import annotations

import torch

from resispec.verify import NO_CANDIDATE, Method, register


def _draw(measure: torch.Tensor, uniform: torch.Tensor, fallback: torch.Tensor) -> torch.Tensor:
    """One token per row of an unnormalised measure [B, V] by inverse CDF (rows without mass: fallback)."""
    cdf = measure.double().cumsum(-1)  # [B, V]
    cdf = torch.where(cdf[:, -1:] > 0, cdf, fallback.double().cumsum(-1))
    index = torch.searchsorted(cdf, uniform.unsqueeze(-1) * cdf[:, -1:], right=True)[:, 0]
    return index.clamp(max=cdf.shape[-1] - 1)


class FirstCandidate(Method):
    """Single-draft speculative sampling on the first candidate."""

    name = "first_candidate"
    exact = True
    draws = "with_replacement"  # candidates i.i.d. from q (the first one is a draw from q)
    options = {}  # no options; a method with options gives {name: default}

    def law(self, target_probs, draft_probs, k, **options):
        """(law [V], acceptance) for float64 target_probs, draft_probs [V], each summing to 1."""
        if k == 0:
            return target_probs.clone(), 0.0
        accepted = torch.minimum(target_probs, draft_probs)  # P(emit x through acceptance)
        acceptance = accepted.sum()
        residual = (target_probs - draft_probs).clamp_min(0)
        rest = residual / residual.sum() if residual.sum() > 0 else target_probs
        return accepted + (1 - acceptance) * rest, float(acceptance)

    def verify(self, target_rows, draft_rows, candidates, valid, generator, **options):
        """(accepted [B], token [B]) for target_rows, draft_rows [B, V], candidates long [B, k] and
        valid bool [B, k]; device tensors only (no host reads)."""
        rows = target_rows.shape[0]
        uniforms = torch.rand(rows, 2, generator=generator, device=target_rows.device, dtype=torch.float64)
        if candidates.shape[1] == 0:  # leaves: the bonus token from p
            none = torch.full((rows,), NO_CANDIDATE, dtype=torch.long, device=target_rows.device)
            return none, _draw(target_rows, uniforms[:, 1], target_rows)
        first = candidates[:, 0]  # [B]
        p = target_rows.gather(-1, first[:, None])[:, 0].double()
        q = draft_rows.gather(-1, first[:, None])[:, 0].double()
        ratio = torch.where(q > 0, p / q.clamp_min(torch.finfo(q.dtype).tiny), 0.0)
        accept = valid[:, 0] & (uniforms[:, 0] < ratio)
        # rejected: the residual (p - q)^+; a row whose first candidate is padding has none: p itself
        residual = torch.where(valid[:, :1], (target_rows - draft_rows).clamp_min(0), target_rows)  # [B, V]
        token = torch.where(accept, first, _draw(residual, uniforms[:, 1], target_rows))
        return torch.where(accept, 0, NO_CANDIDATE), token


register(FirstCandidate())
