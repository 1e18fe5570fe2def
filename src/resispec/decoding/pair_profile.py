"""Measuring a pair profile (``resispec.decoding.profile.PairProfile``) on held-out contexts: the
positional acceptance of each verifier at each temperature and the cost profile on this device, timed
with the run's compile and verify modes (resolved for the device; ``meta`` names them)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import torch

from resispec.decoding import costs
from resispec.decoding.compiled import EngineModes
from resispec.decoding.profile import PairProfile, acceptance_rows, pair_distributions, temperature_key

log = logging.getLogger(__name__)
PREFIX_TOKENS = 64  # committed tokens before the timed tree forwards and proposals
TIMED_VERIFY_CANDIDATES = 4  # candidates per timed verifier call (a typical node of the embedded trees)


@torch.no_grad()
def measure_pair(
    target,
    draft,
    drafter,
    contexts: Sequence[torch.Tensor],
    *,
    temperatures: Sequence[float],
    methods: Sequence[str],
    settings: dict,
    modes: EngineModes | None = None,
) -> PairProfile:
    """The pair profile of ``target`` with ``draft`` (a causal LM or an EAGLE head) and its ``drafter``;
    ``settings``: the config's ``profile`` section (candidates, repeats, max_nodes, max_depth);
    ``modes``: the engine's compile and verify modes, as ``generate`` takes them (None: the device's)."""
    start = time.monotonic()
    modes = (modes or EngineModes()).on(next(target.parameters()).device)
    acceptance, distributions = {}, None
    for index, temperature in enumerate(temperatures):
        pairs = list(pair_distributions(target, draft, contexts, float(temperature)))
        distributions = distributions or pairs
        acceptance[temperature_key(temperature)] = {
            method: acceptance_rows(pairs, method, k=settings["candidates"]) for method in methods
        }
        _progress("acceptance", index + 1, len(temperatures), start)
    profile = PairProfile(
        acceptance, _costs(target, drafter, contexts, distributions, methods, settings, modes)
    )
    profile.meta = {
        "contexts": len(contexts),
        "positions": sum(len(c) for c in contexts),
        "seconds": time.monotonic() - start,
        "max_nodes": settings["max_nodes"],
        "max_depth": settings["max_depth"],
        "threads": torch.get_num_threads(),
        **modes,
    }
    return profile


def _costs(target, drafter, contexts, distributions, methods, settings, modes) -> costs.CostProfile:
    repeats, start = settings["repeats"], time.monotonic()
    device = next(target.parameters()).device
    context = torch.cat([torch.as_tensor(c) for c in contexts])[: PREFIX_TOKENS + repeats + 2].to(device)
    nodes = [n for n in costs.NODE_GRID if n <= settings["max_nodes"]]
    target_s = costs.target_seconds(target, context[:PREFIX_TOKENS], nodes, repeats, modes["compile_mode"])
    _progress("target forwards", len(nodes), len(nodes), start)
    features = None
    if drafter.needs_target_features:
        features = target(input_ids=context[None], output_hidden_states=True).hidden_states[-1][0]  # [L, H]
    probes = costs.probe_trees()
    draft_s = [
        costs.proposal_seconds(
            drafter,
            context,
            tree,
            draws="with_replacement",
            repeats=repeats,
            features=features,
            compile_mode=modes["compile_mode"],
        )
        for tree in probes
    ]
    _progress("proposals", len(probes), len(probes), start)
    verify = {
        m: costs.verifier_seconds(
            m, distributions, TIMED_VERIFY_CANDIDATES, 10 * repeats, modes["verify_mode"]
        )
        for m in methods
    }
    return costs.CostProfile(nodes, target_s, costs.fit_draft_model(probes, draft_s), verify)


def _progress(what: str, done: int, total: int, start: float) -> None:
    elapsed = time.monotonic() - start
    log.info("pair profile: %s %d/%d, ETA %.0f s", what, done, total, elapsed / done * (total - done))
