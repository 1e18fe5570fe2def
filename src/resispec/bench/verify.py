"""``python -m resispec.bench verify``: acceptance and per-node cost of every verifier.

For each vocabulary size (synthetic Zipf-like pairs, see ``pairs.zipf_pair``) or for logged pairs
(``--records``, format in ``pairs.load_records``) and each k, prints the mean exact acceptance of
specinfer, sequoia, ers, resispec and optimal, the mean alpha*, the fraction of the specinfer-to-alpha*
gap that ers closes (ratio of means), the mean wall time per node of specinfer, ers and optimal (us) and
of each sampler as a ratio to specinfer (float32 inputs, validation off, candidates drawn outside the
timed call), and optimal's time per node as a ratio to the target's tree forward (``--target``: one
forward over the nodes of ``--tree`` after a ``--prefix``-token prompt, median of repeats, see
``forward.py``). optimal plans once per node on the full vocabulary (no ratio bins, so no acceptance
loss); its time split is plan / selection / accept-or-residual. specinfer, ers, optimal and alpha* are
exact; sequoia and resispec are unbiased estimates from ``--paths`` sampled rejection histories per pair
(``resispec.verify.estimate``); the ``se`` column is the largest standard error of those means.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from resispec.verify import alpha_star, estimate, get_method, get_verifier, names

from .pairs import load_records, synthetic_pairs


def law_methods() -> tuple[str, ...]:
    """The registered methods with drawn candidates (i.i.d. or without replacement), whose laws and
    samplers the benchmark times."""
    return tuple(m for m in names() if get_method(m).replacement is not None)


def __getattr__(name: str):
    if name == "LAW_METHODS":
        return law_methods()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


SPLIT = ("budgeting", "redistribution", "proxy")  # optimal: plan / selection / accept-or-residual


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m resispec.bench verify", description=__doc__)
    parser.add_argument("--vocab", type=int, nargs="+", default=[32000, 49152], help="synthetic V values")
    parser.add_argument("--k", type=int, nargs="+", default=[2, 3, 5, 11], help="numbers of candidates")
    parser.add_argument("--pairs", type=int, default=8, help="pairs per (source, k)")
    parser.add_argument("--records", default=None, help=".pt file with target_probs/draft_probs [N, V]")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--exponent", type=float, default=1.0, help="Zipf exponent of synthetic pairs")
    parser.add_argument("--noise", type=float, default=1.0, help="logit noise between target and draft")
    parser.add_argument("--timing-calls", type=int, default=30, help="timed sampler calls per pair")
    parser.add_argument("--paths", type=int, default=256, help="sampled histories (sequoia, resispec)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--target", default=None, help="target model directory: time its tree forward")
    parser.add_argument("--tree", default="d5b3", help="tree of the target forward")
    parser.add_argument("--prefix", type=int, default=64, help="cached prompt tokens before the tree")
    parser.add_argument("--forward-repeats", type=int, default=7, help="timed forwards (median kept)")
    return parser.parse_args(argv)


def candidates_for(draws: str, draft: torch.Tensor, k: int, generator: torch.Generator) -> torch.Tensor:
    if draws == "without_replacement":  # Gumbel top-k
        gumbel = -torch.log(-torch.log(torch.rand(draft.shape, generator=generator).clamp_min(1e-20)))
        return torch.topk(torch.log(draft) + gumbel, k).indices
    return torch.multinomial(draft, k, replacement=True, generator=generator)


def time_samplers(pairs, k: int, calls: int, seed: int) -> dict[str, tuple[float, dict[str, float]]]:
    """Mean seconds per call and mean timing split of each sampler.

    Calls are interleaved across methods (same node, then the next method) so that load from other
    processes affects every method alike. The mean (not the median) is used because the cost is bimodal:
    an accepted first candidate is cheap, a rejection costs O(V) work.
    """
    methods = law_methods()
    verifiers = {m: get_verifier(m, validate=False) for m in methods}
    generator = torch.Generator().manual_seed(seed)
    times = {m: [] for m in methods}
    split = {m: {} for m in methods}
    for target, draft in pairs:
        target32, draft32 = target.float(), draft.float()
        for _ in range(calls):
            for method, verifier in verifiers.items():
                cands = candidates_for(verifier.draws, draft32, k, generator)
                start = time.perf_counter()
                verifier(target32, draft32, cands, generator)
                times[method].append(time.perf_counter() - start)
                for key, value in verifier.last_timings.items():
                    split[method][key] = split[method].get(key, 0.0) + value / (calls * len(pairs))
    return {m: (statistics.fmean(times[m]), split[m]) for m in methods}


def acceptance_row(pairs, k: int, args) -> dict[str, float]:
    """Mean acceptance of each method, mean alpha* and the largest standard error of a mean."""
    methods = law_methods()
    row = {m: 0.0 for m in methods} | {"alpha*": 0.0, "se": 0.0}
    generator = torch.Generator().manual_seed(args.seed)
    variances = {"sequoia": 0.0, "resispec": 0.0}
    for target, draft in pairs:
        for method in methods:
            result = estimate(method, target, draft, k, paths=args.paths, generator=generator)
            row[method] += result.acceptance / len(pairs)
            if method in variances:
                variances[method] += (result.err / len(pairs)) ** 2
        row["alpha*"] += alpha_star(target, draft, k) / len(pairs)
    row["se"] = max(variances.values()) ** 0.5
    gap = row["alpha*"] - row["specinfer"]
    row["closed"] = (row["ers"] - row["specinfer"]) / gap if gap > 1e-12 else float("nan")
    return row


HEADER = (
    f"{'source':>14} {'k':>3} | {'specinfer':>9} {'sequoia':>8} {'ers':>7} {'resispec':>8} {'optimal':>8} "
    f"{'alpha*':>7} {'se':>7} {'closed':>6} | {'spec_us':>7} {'ers_us':>7} {'opt_us':>7} {'seq_x':>6} "
    f"{'ers_x':>6} {'resi_x':>6} {'opt_x':>6} {'opt/fwd':>7} | ers us b/r/p | opt us plan/sel/acc"
)


def _split(timing: dict, method: str) -> str:
    return "/".join(f"{timing[method][1].get(key, 0.0) * 1e6:.0f}" for key in SPLIT)


def format_row(source: str, k: int, row: dict, timing: dict, forward_s: float | None) -> str:
    base, optimal = timing["specinfer"][0], timing["optimal"][0]
    to_forward = f"{optimal / forward_s:7.2%}" if forward_s else f"{'n/a':>7}"
    return (
        f"{source:>14} {k:>3} | {row['specinfer']:9.4f} {row['sequoia']:8.4f} {row['ers']:7.4f} "
        f"{row['resispec']:8.4f} {row['optimal']:8.4f} {row['alpha*']:7.4f} {row['se']:7.1e} "
        f"{row['closed']:6.1%} | {base * 1e6:7.0f} {timing['ers'][0] * 1e6:7.0f} {optimal * 1e6:7.0f} "
        + " ".join(f"{timing[m][0] / base:6.2f}" for m in ("sequoia", "ers", "resispec", "optimal"))
        + f" {to_forward} | {_split(timing, 'ers')} | {_split(timing, 'optimal')}"
    )


def forward_line(args) -> tuple[float | None, str]:
    """(seconds, description) of the target's tree forward, or (None, why not)."""
    if not args.target:
        return None, "no --target: optimal's time is not compared with a tree forward (opt/fwd n/a)"
    from .forward import tree_forward_seconds

    seconds = tree_forward_seconds(
        args.target, tree=args.tree, prefix=args.prefix, repeats=args.forward_repeats
    )
    return seconds, (
        f"target tree forward: {seconds * 1e3:.1f} ms ({args.tree} after a {args.prefix}-token prefix, "
        f"{args.threads} thread(s), median of {args.forward_repeats}, {args.target})"
    )


def sources(args):
    if args.records:
        yield "records", load_records(args.records, limit=args.pairs)
    for vocab in args.vocab:
        pairs = synthetic_pairs(vocab, args.pairs, args.seed, exponent=args.exponent, noise=args.noise)
        yield f"zipf V={vocab}", pairs


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    forward_s, description = forward_line(args)
    print(HEADER, flush=True)
    for source, pairs in sources(args):
        for k in args.k:
            row = acceptance_row(pairs, k, args)
            timing = time_samplers(pairs, k, args.timing_calls, args.seed + k)
            print(format_row(source, k, row, timing, forward_s), flush=True)
    print(description, flush=True)
    return 0
