"""Benchmark: autoregressive vs HF assisted generation vs tree speculative decoding on one model pair.

``python -m resispec.bench engine --target DIR --draft DIR [--trees auto,chain4,d4b2] [--methods ...]``
decodes the same prompts with every system in one run, round-robin per prompt (so drifting machine
load hits every system alike), the same seed per prompt for every system, after a warm-up. It prints
tokens/s, the speedup over the autoregressive baseline (the target alone on the engine's static cache with
the engine's compile mode, ``decoding.autoregressive``) and over HF assisted generation (its default
dynamic schedule; eager, its own cache: it cannot take the engine's modes, so the table says so beside
its ratio) with paired bootstrap 95% intervals over prompts, the accepted length (new
tokens per target forward), the engine's share of its wall time spent drafting / in the target forward /
verifying / shaping / committing / elsewhere (prefill, loop) and its overhead share (step - drafting -
target forward) / step over the steps after the first (``resispec.bench.overhead``). Tree ``auto`` is
resolved per verifier from the pair profile (``--profile``, or measured here on held-out documents).

Without ``--target`` / ``--draft`` it uses the CPU default pair of the workflow (``DEFAULT_PAIR``; built
by ``snakemake --cores 2 results/models/smollm2-135m/READY.json results/models/draft-default/READY.json``)
and prints, besides the goals over the baselines, the CPU goal: overhead share <= 5% for every
exact method on d5b3 and ``auto`` (run ``--trees auto,d5b3 --no-hf`` for just those).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from resispec.bench import engine_runs as runs
from resispec.bench.engine_report import GOALS, print_rows, summarise
from resispec.bench.engine_runs import synthetic_pair
from resispec.bench.overhead import cpu_overhead_lines
from resispec.decoding.arguments import tree_spec
from resispec.decoding.compiled import EngineModes, compile_mode_for, verify_mode_for
from resispec.decoding.tree_specs import profile_methods, resolve

__all__ = ["main", "run", "synthetic_pair", "GOALS", "DEFAULT_PAIR"]

#: the workflow's CPU default pair (config/config.yaml), as `snakemake` leaves it under results/models/
DEFAULT_PAIR = ("results/models/smollm2-135m", "results/models/draft-default")


def _args(argv):
    parser = argparse.ArgumentParser(prog="python -m resispec.bench engine", description=__doc__)
    parser.add_argument("--target", help="target model directory (HF format)")
    parser.add_argument("--draft", help="draft model directory (same tokenizer)")
    parser.add_argument(
        "--synthetic", metavar="DIR", help="build (once) and use a synthetic random pair in DIR"
    )
    parser.add_argument(
        "--trees", default="auto,chain2,chain3,chain4,d4b2", help="tree specs; auto per verifier"
    )
    parser.add_argument(
        "--methods",
        default="specinfer,sequoia,ers,optimal,deterministic",
        help="verifiers (unknown: skipped); the default is every exact method, the CPU goal's list",
    )
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--prompts", type=int, default=8, help="documents of --dataset used as prompts")
    parser.add_argument("--prompt-tokens", type=int, default=64)
    parser.add_argument("--dataset", default="cnn_dailymail")
    parser.add_argument("--profile", help="pair profile JSON (resispec profile-pair); else measured here")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (CPU)")
    parser.add_argument("--repeats", type=int, default=1, help="round-robin passes over the prompts")
    parser.add_argument("--no-hf", action="store_true", help="skip HF assisted generation")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    parser.add_argument(
        "--compile",
        default=None,
        metavar="MODE",
        help="the engine's compile_mode (none, default, reduce-overhead, ...; default: chosen per device)",
    )
    parser.add_argument(
        "--verify-mode", default=None, help="the engine's verify_mode (tree or path; default: per device)"
    )
    return parser.parse_args(argv)


def _profile(args, target, draft, drafter, prompts):
    from resispec.decoding.pair_profile import measure_pair
    from resispec.decoding.profile import PairProfile

    if args.profile:
        profile = PairProfile.read(args.profile)
        needed = {m for *_, name in _tree_names(args) for m in profile_methods(name)}
        have = profile.methods(args.temperature)
        if missing := sorted(needed - set(have)):
            raise ValueError(
                f"--profile {args.profile}: no acceptance rows for {missing} at temperature "
                f"{args.temperature:g} (it has {have}); omit --profile to measure them here"
            )
        return profile
    vocab = target.config.vocab_size
    held_out = runs.load_prompts(
        args.target, args.prompts + 8, args.prompt_tokens, args.device, dataset=args.dataset, vocab=vocab
    )[args.prompts :]
    settings = {"candidates": 8, "repeats": 3, "max_nodes": 64, "max_depth": 8}
    return measure_pair(
        target,
        draft,
        drafter,
        held_out or prompts,
        temperatures=[args.temperature],
        methods=args.methods,
        settings=settings,
        modes=EngineModes(args.compile, args.verify_mode),
    )


def _tree_names(args) -> list[tuple[str, str, str]]:
    """(spec, method, tree name) of every engine configuration: ``auto`` becomes ``auto-<method>``."""
    return [
        (spec, method, f"auto-{method}" if spec == "auto" else spec)
        for spec in args.trees.split(",")
        for method in args.methods
    ]


def _configs(args, profile) -> list[tuple[str, str, str, object]]:
    """(system, tree name, method, resolved tree) of every timed configuration, baselines first."""
    configs = [("autoregressive", "-", "-", None)] + (
        [] if args.no_hf else [("hf_assisted", "dynamic", "-", None)]
    )
    for spec, method, name in _tree_names(args):
        needs = profile if profile_methods(name) else None
        tree = resolve(name, profile=needs, temperature=args.temperature)
        configs.append(("engine", f"{spec}({tree.num_nodes})" if spec == "auto" else spec, method, tree))
    return configs


def _default_pair(args) -> None:
    """No models named: the CPU default pair, or an error that says how to build it."""
    if args.target or args.draft:
        return
    missing = [path for path in DEFAULT_PAIR if not (Path(path) / "READY.json").is_file()]
    if missing:
        raise ValueError(
            f"give --target and --draft model directories (or --synthetic DIR); the CPU default pair is not "
            f"built here ({', '.join(missing)} missing): run `snakemake --cores 2 "
            f"{' '.join(f'{p}/READY.json' for p in DEFAULT_PAIR)}` from the repository root"
        )
    args.target, args.draft = DEFAULT_PAIR


def _time(config, target, draft, drafter, ids, args, seed, prefill_s=0.0) -> runs.Timed:
    system, _, method, tree = config
    common = {"max_new_tokens": args.max_new_tokens, "temperature": args.temperature, "seed": seed}
    if system == "engine":
        run = runs.EngineRun(method, tree, compile_mode=args.compile, verify_mode=args.verify_mode, **common)
        return runs.engine_generate(target, drafter, ids, run, prefill_s=prefill_s)
    if system == "autoregressive":
        return runs.autoregressive_generate(target, ids, compile_mode=args.compile, **common)
    return runs.hf_generate(target, ids, assistant=draft, **common)


def modes(system: str, args) -> dict:
    """The ``compile_mode`` / ``verify_mode`` a system ran with (resolved for the device): the engine's
    options for the engine and the autoregressive baseline (which verifies nothing), ``runs.HF_MODE``
    for HF assisted generation."""
    device = torch.device(args.device)
    if system == "hf_assisted":
        return {"compile_mode": runs.HF_MODE, "verify_mode": "hf"}
    verify = verify_mode_for(args.verify_mode, device) if system == "engine" else "none"
    return {"compile_mode": compile_mode_for(args.compile, device), "verify_mode": verify}


def run(argv=None) -> list[dict]:
    from resispec.decoding.drafters import ModelDrafter
    from resispec.models.loading import load_model
    from resispec.verify import METHODS

    args = _args(argv)
    if args.synthetic:
        args.target, args.draft = synthetic_pair(args.synthetic)
    _default_pair(args)
    if not (args.target and args.draft):
        raise ValueError("give both --target and --draft model directories, or --synthetic DIR")
    if args.threads:
        torch.set_num_threads(args.threads)
    args.methods = (
        [m for m in args.methods.split(",") if m in METHODS] if args.temperature > 0 else ["greedy"]
    )
    for _, _, name in _tree_names(args):  # a bad tree name stops here, before any model loads or is timed
        tree_spec(name)
    target = load_model(args.target, device=args.device, dtype=args.dtype)
    draft = load_model(args.draft, device=args.device, dtype=args.dtype)
    drafter = ModelDrafter(draft)
    vocab = target.config.vocab_size
    prompts = runs.load_prompts(
        args.target, args.prompts, args.prompt_tokens, args.device, dataset=args.dataset, vocab=vocab
    )
    configs = _configs(args, _profile(args, target, draft, drafter, prompts))
    warm = argparse.Namespace(**{**vars(args), "max_new_tokens": _warmup_tokens(args)})
    for config in configs:  # warm-up: every system once, untimed
        _time(config, target, draft, drafter, prompts[0], warm, args.seed)
    timed = {index: [[] for _ in prompts] for index in range(len(configs))}
    start, total = time.perf_counter(), args.repeats * len(prompts)
    for repeat in range(args.repeats):
        for p, ids in enumerate(prompts):
            prefill = runs.engine_prefill(
                target, drafter, ids, args.compile, args.verify_mode
            )  # out of the overhead share
            order = [(p + repeat + i) % len(configs) for i in range(len(configs))]  # rotate the start
            for index in order:
                timed[index][p].append(
                    _time(configs[index], target, draft, drafter, ids, args, args.seed + p, prefill)
                )
            _progress(repeat * len(prompts) + p + 1, total, time.perf_counter() - start, len(configs))
    rows = summarise(configs, timed, seed=args.seed)
    return [{**row, **modes(row["system"], args)} for row in rows]


def _warmup_tokens(args) -> int:
    """New tokens of each system's untimed warm-up: 4 when the engine runs eagerly; a whole generation when
    it compiles, so that every graph (one per tree level and pending length) is built before the timing."""
    compiled = compile_mode_for(args.compile, torch.device(args.device)) != "none"
    return args.max_new_tokens if compiled else 4


def _progress(done: int, total: int, elapsed: float, systems: int) -> None:
    """One line on stderr after each prompt (outside the timed calls): prompts done, elapsed, ETA."""
    eta = elapsed / done * (total - done)
    print(
        f"[bench engine] prompt {done}/{total} ({systems} systems): {elapsed:.0f} s, ETA {eta:.0f} s",
        file=sys.stderr,
        flush=True,
    )


def main(argv=None) -> int:
    rows = run(argv)
    print_rows(rows)
    args = _args(argv)
    methods = args.methods.split(",") if args.temperature > 0 else ["greedy"]
    default = (args.target, args.draft) in ((None, None), DEFAULT_PAIR) and not args.synthetic
    why_not = None if default else "the goal is for the CPU default pair, this run has another"
    for line in cpu_overhead_lines(rows, methods, why_not):
        print(line)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
