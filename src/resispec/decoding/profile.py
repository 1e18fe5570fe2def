"""Measurements of a (target, draft) pair that shape its trees: positional acceptance vectors, measured
once per pair (and temperature) by running a verifier on held-out contexts.

A positional acceptance vector ``u`` (Sequoia's "acceptance rate vector") has ``u[i]`` = the
probability that the (i+1)-th of k candidates is the accepted one, over every verified node
(unconditional: ``sum(u)`` is the node's acceptance with k candidates). It depends on the verifier
and on how its candidates are drawn (with or without replacement), so it is measured per method.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from resispec.decoding.costs import CostProfile
from resispec.decoding.drafters.base import draw_children, process_logits
from resispec.verify.registry import get_method

ACCEPTANCE_CANDIDATES = 8  # siblings per measured node: wider than any embedded tree's branching


@torch.no_grad()
def pair_distributions(target, draft, contexts, temperature: float) -> Iterator[tuple[torch.Tensor, ...]]:
    """Per context, the target's and the draft's next-token distributions (float32, [S, V] each).

    ``draft``: a Hugging Face causal LM, or an EAGLE-1 head (``resispec.models.eagle_head.EagleHead``,
    fed the target's last hidden states: its row t predicts the token after position t + 1).
    """
    device = next(target.parameters()).device
    for ids in contexts:
        ids = torch.as_tensor(ids, dtype=torch.long, device=device)[None]  # [1, S]
        if hasattr(draft, "fc"):  # an EAGLE head: pairs (feature f_t, token x_{t+1})
            out = target(input_ids=ids, output_hidden_states=True)
            _, head_logits = draft(ids[:, 1:], out.hidden_states[-1][:, :-1])  # [1, S-1, V]
            target_logits = out.logits[0, 1:]
            draft_logits = head_logits[0]
        else:
            target_logits, draft_logits = target(input_ids=ids).logits[0], draft(input_ids=ids).logits[0]
        yield process_logits(target_logits, temperature), process_logits(draft_logits, temperature)


@torch.no_grad()
def acceptance_vector(
    distributions: Sequence[tuple[torch.Tensor, torch.Tensor]],
    method: str,
    *,
    k: int = ACCEPTANCE_CANDIDATES,
    seed: int = 0,
) -> list[float]:
    """``u`` [k] of ``method``'s sampler, its candidates drawn as it draws them, at every position of
    ``distributions`` (pairs of target / draft probabilities [S, V])."""
    from resispec.verify import get_verifier

    verifier = get_verifier(method, validate=False)
    generator = torch.Generator(device=distributions[0][0].device).manual_seed(seed)
    accepted, nodes = [0] * k, 0  # counts per sibling position (host integers: no device traffic)
    for target_probs, draft_probs in distributions:
        candidates, valid = draw_children(draft_probs, k, verifier.draws, generator)  # [S, k], [S, k]
        for position in range(target_probs.shape[0]):
            chosen = candidates[position][valid[position]]  # [<= k]
            outcome = verifier(target_probs[position], draft_probs[position], chosen, generator)
            nodes += 1
            if outcome.accepted_index is not None:
                accepted[outcome.accepted_index] += 1
    return [count / max(nodes, 1) for count in accepted]


@torch.no_grad()
def position_acceptance(
    target,
    draft,
    contexts,
    *,
    k: int = ACCEPTANCE_CANDIDATES,
    temperature: float = 1.0,
    seed: int = 0,
    method: str = "sequoia",
) -> list[float]:
    """``u`` of ``method`` (default ``sequoia``: candidates without replacement) for a (target, draft)
    pair at ``temperature`` on held-out ``contexts`` (token-id sequences)."""
    distributions = list(pair_distributions(target, draft, contexts, temperature))
    return acceptance_vector(distributions, method, k=k, seed=seed)


def acceptance_rows(distributions, method: str, *, k: int = ACCEPTANCE_CANDIDATES, seed: int = 0) -> list:
    """``method``'s positional acceptance: a vector [k], or rows [k, k] (row c-1: c candidates) for
    plan-dependent verifiers; the input of ``resispec.decoding.tree_search.sequoia_tables``."""
    # a plan that depends on the number of candidates (``Method.depends_on_k``) is measured for every
    # child count; otherwise the i-th decision ignores how many candidates follow (one vector serves)
    if not get_method(method).depends_on_k:
        return acceptance_vector(distributions, method, k=k, seed=seed)
    rows = []
    for count in range(1, k + 1):
        vector = acceptance_vector(distributions, method, k=count, seed=seed)
        rows.append(vector + [0.0] * (k - count))
    return rows


def temperature_key(temperature: float) -> str:
    """The key of a temperature in ``PairProfile.acceptance``: ``1`` -> ``"1"``, ``0.6`` -> ``"0.6"``."""
    return f"{float(temperature):g}"


@dataclass
class PairProfile:
    """What the workflow measures once per (target, draft, device): positional acceptance per
    temperature and method (``acceptance["1.0"]["specinfer"]``) and the cost profile."""

    acceptance: dict[str, dict[str, list]]
    costs: CostProfile
    meta: dict = field(default_factory=dict)

    def methods(self, temperature: float) -> list[str]:
        """The verifiers with acceptance rows at ``temperature``."""
        return sorted(self.acceptance.get(temperature_key(temperature), {}))

    def rows(self, temperature: float, method: str) -> list:
        key = temperature_key(temperature)
        table = self.acceptance.get(key, {})
        if method not in table:
            have = {t: sorted(m) for t, m in self.acceptance.items()}
            raise ValueError(
                f"pair profile has no acceptance for temperature {key}, method {method!r}: {have}"
            )
        return table[method]

    def to_json(self) -> str:
        return json.dumps(
            {"acceptance": self.acceptance, "costs": self.costs.to_dict(), "meta": self.meta},
            indent=2,
            sort_keys=True,
        )

    @classmethod
    def read(cls, path: str | Path) -> PairProfile:
        data = json.loads(Path(path).read_text())
        return cls(data["acceptance"], CostProfile(**data["costs"]), data.get("meta", {}))
