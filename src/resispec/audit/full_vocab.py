"""Exactness on the full vocabulary, and its Monte Carlo cross-check on the real sampler.

The timing pass keeps the full rows of p and q for a sample of nodes (``full`` in an audited node, codec
``shuffle-zlib-f4le``: float32 little-endian, the 4 bytes of each value grouped by significance, zlib;
written by `resispec.decoding.audit_sampling`). Each such node gets a row with scope "full": the
verifier's law on the real vocabulary (history recursion for sequoia / resispec, capped at
``max_histories`` with the pruned mass as certified KL/TV intervals, `resispec.audit.bounds`).

Monte Carlo: the real sampler (``get_verifier(method, validate=False)``, the object decoding calls) is run
``draws`` times on the node's float32 rows with fresh i.i.d. candidates from q. It estimates, with 95%
Wilson intervals, (a) the acceptance rate, to set beside the recursion's certified [acceptance,
acceptance + err], and (b) TV_A = law(A) - p(A) on the set A where the computed law exceeds p: a lower
bound of TV(p, law) that equals it when the computed law is right, and whose certified value from the
recursion is exactly [tv, tv_upper]. An MC interval disjoint from the recursion's flags a disagreement.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import torch

from resispec.audit.exactness import NODE_KEYS, law_summary

ROW_CODEC = "shuffle-zlib-f4le"
Z95 = 1.959963984540054  # two-sided 95% normal quantile (Wilson intervals)
MC_CHUNK = 4096  # candidate tuples drawn per torch.multinomial call
MIN_HISTORIES = 64  # below this many histories the pruned mass of a real node is rarely small


class Proportion(NamedTuple):
    """An estimated proportion with its 95% Wilson score interval."""

    value: float
    low: float
    high: float


def decode_rows(full: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """(target_probs, draft_probs) [V] float32 of an encoded full-row entry."""
    if full.get("codec") != ROW_CODEC:
        raise ValueError(f"full rows: codec {full.get('codec')!r} is not {ROW_CODEC!r}")

    def decode(blob: bytes) -> torch.Tensor:
        shuffled = np.frombuffer(zlib.decompress(blob), dtype=np.uint8).reshape(4, -1)  # [4, V]
        values = shuffled.T.copy().view("<f4").reshape(-1)  # [V]
        if values.size != full["vocab"]:
            raise ValueError(f"full rows: decoded {values.size} values, expected vocab {full['vocab']}")
        return torch.from_numpy(values.astype(np.float32))

    return decode(full["target"]), decode(full["draft"])


class MonteCarlo(NamedTuple):
    """Monte Carlo settings: the first ``nodes`` full-vocabulary nodes of each method in ``methods`` get
    ``draws`` runs of the real sampler, from ``generator``."""

    nodes: int
    draws: int
    generator: torch.Generator
    methods: tuple[str, ...] = ("resispec",)


def full_vocab_rows(
    nodes: list[dict],
    *,
    max_histories: int | None = None,
    state_mb: float = 100.0,
    eps: float = 1e-9,
    mc: MonteCarlo | None = None,
    progress: Callable[[int, int, dict], None] | None = None,
) -> list[dict]:
    """One scope-"full" row per audited node that kept its full rows (``node["method"]`` is the verifier),
    with ``mc_*`` columns on the first ``mc.nodes`` nodes of each method in ``mc.methods``.

    ``max_histories`` caps the history recursion; without it, as many histories as fit one [H, V]
    float64 state in ``state_mb`` MiB (``state_histories``). ``progress(done, total, row)`` after each.
    """
    from resispec.verify import evaluate

    kept = [(i, node) for i, node in enumerate(nodes) if "full" in node and node["candidates"]]
    rows, checked = [], dict.fromkeys(mc.methods if mc else (), 0)
    for done, (index, node) in enumerate(kept, 1):
        method, k = node["method"], len(node["candidates"])
        target, draft = (row.double() / row.double().sum() for row in decode_rows(node["full"]))
        cap = max_histories or state_histories(state_mb, target.numel())
        result = evaluate(method, target, draft, k, eps=eps, max_histories=cap)
        row = {
            "node": index,
            "scope": "full",
            "method": method,
            **{k: node[k] for k in NODE_KEYS if k in node},
        }
        row.update(law_summary(method, target, draft, k, result))
        if mc is not None and checked.get(method, mc.nodes) < mc.nodes:
            checked[method] += 1
            row.update(monte_carlo(row, node, result.law > target, draws=mc.draws, generator=mc.generator))
        rows.append(row)
        if progress is not None:
            progress(done, len(kept), row)
    return rows


def state_histories(state_mb: float, vocab: int) -> int:
    """Histories whose [H, V] float64 state fits in ``state_mb`` MiB (at least ``MIN_HISTORIES``)."""
    return max(MIN_HISTORIES, int(state_mb * 2**20) // (8 * vocab))


def wilson(successes: int, trials: int) -> Proportion:
    """Wilson score 95% interval of a binomial proportion."""
    p, z2 = successes / trials, Z95**2
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = Z95 * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials**2)) / (1 + z2 / trials)
    return Proportion(p, max(0.0, centre - half), min(1.0, centre + half))


def sampler_counts(method: str, node: dict, draws: int, generator: torch.Generator, over: torch.Tensor):
    """Run the real sampler ``draws`` times on the node's rows; returns (accepted count, emitted tokens
    in ``over``)."""
    from resispec.verify import get_verifier

    verifier = get_verifier(method, validate=False)
    if verifier.draws != "with_replacement":
        raise ValueError(
            f"monte carlo: {method!r} draws {verifier.draws}; only i.i.d. candidates are supported"
        )
    target, draft = decode_rows(node["full"])  # float32, as decoding passes them
    k, accepted, inside = len(node["candidates"]), 0, 0
    for start in range(0, draws, MC_CHUNK):
        n = min(MC_CHUNK, draws - start)
        candidates = torch.multinomial(draft, n * k, replacement=True, generator=generator).view(n, k)
        for row in candidates:
            outcome = verifier(target, draft, row, generator)
            accepted += outcome.accepted_index is not None
            inside += bool(over[outcome.token])
    return accepted, inside


def monte_carlo(row: dict, node: dict, over: torch.Tensor, *, draws: int, generator: torch.Generator) -> dict:
    """``mc_*`` columns of one full-vocabulary row: MC acceptance and TV_A (A = ``over`` [V], where the
    computed law exceeds p) with 95% intervals, and whether both agree with the recursion's intervals."""
    accepted, inside = sampler_counts(node["method"], node, draws, generator, over)
    acceptance, in_a = wilson(accepted, draws), wilson(inside, draws)
    target = decode_rows(node["full"])[0].double()
    target_a = float((target / target.sum())[over].sum())
    tv = Proportion(in_a.value - target_a, in_a.low - target_a, in_a.high - target_a)
    agrees_tv = tv.high >= row["tv"] and tv.low <= row["tv_upper"]
    agrees_acceptance = (
        acceptance.high >= row["acceptance"] and acceptance.low <= row["acceptance"] + row["law_err"]
    )
    return {
        "mc_draws": draws,
        "mc_acceptance": acceptance.value,
        "mc_acceptance_low": acceptance.low,
        "mc_acceptance_high": acceptance.high,
        "mc_tv": tv.value,
        "mc_tv_low": tv.low,
        "mc_tv_high": tv.high,
        "mc_consistent": bool(agrees_tv and agrees_acceptance),
    }
