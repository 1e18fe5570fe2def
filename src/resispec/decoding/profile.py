"""Measurements of a (target, draft) pair that shape its trees: Sequoia's positional acceptance vector."""

from __future__ import annotations

import torch


@torch.no_grad()
def position_acceptance(target, draft, contexts, *, k: int = 8, temperature: float = 1.0, seed: int = 0):
    """Sequoia's acceptance vector: P(the i-th candidate is accepted | the first i-1 were rejected), by
    running the `sequoia` sampler (candidates without replacement) at every position of `contexts`."""
    from resispec.decoding.drafters.base import draw_children, process_logits
    from resispec.verify import get_verifier

    verifier = get_verifier("sequoia")
    device = next(target.parameters()).device
    generator = torch.Generator(device=device).manual_seed(seed)  # on the models' device, as the sampler's
    tried, accepted = torch.zeros(k, device=device), torch.zeros(k, device=device)
    for ids in contexts:
        ids = ids.to(device)
        target_probs = process_logits(target(ids[None]).logits[0], temperature)  # [S, V]
        draft_probs = process_logits(draft(ids[None]).logits[0], temperature)  # [S, V]
        candidates, valid = draw_children(draft_probs, k, verifier.draws, generator)  # [S, k], [S, k]
        for position in range(ids.numel()):
            chosen = candidates[position][valid[position]]  # [<=k]
            outcome = verifier(target_probs[position], draft_probs[position], chosen, generator)
            reached = k if outcome.accepted_index is None else outcome.accepted_index + 1
            tried[:reached] += 1
            if outcome.accepted_index is not None:
                accepted[outcome.accepted_index] += 1
    return (accepted / tried.clamp_min(1)).tolist()
