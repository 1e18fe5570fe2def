"""GPU check: the engine on the paper's model shapes, in under five minutes, on any CUDA machine.

    PYTHONPATH=src python -m resispec.bench gpu                         # CUDA, Llama-2-7B / llama-68m shapes
    PYTHONPATH=src python -m resispec.bench gpu --device cpu --scale tiny   # anywhere, in seconds

Needs only what a GPU machine with PyTorch and transformers has: Python >= 3.11, torch >= 2.6 (its
``torch.accelerator`` is what the engine's step timers synchronise with), transformers 5 (tested with
5.24, whose models take ``cache=``, and 5.17, whose models take ``past_key_values=``: the engine picks
the keyword, ``resispec.decoding.kv_cache.cache_kwargs``), numpy and PyYAML. No install step, no
network, no downloads; the bench imports nothing else itself (no scipy, pandas, matplotlib, snakemake,
datasets: the JSON lists every third-party module the run imported, transformers' own imports included).
Missing or too old packages are named at start. Before timing, a tiny float32 pair on the same device
checks that the engine's greedy decoding reproduces transformers' greedy generation there
(``engine_check`` in the JSON).

It builds the paper's Llama-2-7B target and JackFram/llama-68m draft from their published configs
(``resispec/models/published_models.yaml``) with random weights in float16 (``--dtype``), shaped so that
the draft agrees with the target like a real small draft (``resispec.bench.gpu_pair``: a shared random
bigram structure plus independent context-dependent layers; single-candidate acceptance 0.66-0.70,
entropy ~2.7-2.9 nats at 32,000 tokens), so the verifiers walk realistic accept paths through the real
engine; the JSON records the acceptance measured on the prefix and each configuration's accepted length.
Then it prints:

- the target's forward time against tree nodes (1..160) on a ``--prefix``-token prefix, and the draft's
  per level (one drafted level = one draft forward over that level's nodes);
- per tree (d5b3, d7b2, d4b5, d3b11, and ``auto``: Sequoia's hardware-aware tree per method from a
  small pair profile measured here) and method: the engine's step time (median and 10-90% spread over
  the steps of one generation after a warm-up generation, first step left out) split into drafting /
  target forward / verification / shaping / commit / between steps, blocking host syncs per step
  (counted on separate, untimed runs) and the overhead share (step - drafting - target forward) / step;
- the engine's GPU goals with verdicts (met / missed / not decided from 95% bootstrap intervals), and
  the elapsed time. Everything goes to one JSON (``--json``).

The time budget (estimated per phase) is in docs/reproduction-notes.md; the elapsed time is printed
at the end. The engine runs eagerly by default
(``--compile none``), although ``generate`` itself compiles on CUDA (``compile_mode="auto"``: CUDA graphs).
Every tree shape then costs minutes of compiling (the target's tree forward and one draft graph per
level and pending length), and a run under the host-sync counter is traced again. The whole matrix
compiled would not fit the budget. ``--compile reduce-overhead --trees d5b3 --methods specinfer,optimal``
times the compiled engine on the goals' tree; ``scripts/gpu-check.sh`` runs both passes.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import re
import sys
import time
from pathlib import Path

#: distribution -> (minimum version or None, why); checked before anything is imported
REQUIREMENTS = {
    "torch": ((2, 6), "torch.accelerator, which the engine's step timers synchronise with"),
    "transformers": ((5, 0), "DynamicCache(config=...) and per-layer cache tensors, as the engine uses them"),
    "numpy": (None, "the engine and the bench's statistics"),
    "PyYAML": (None, "reads resispec/models/published_models.yaml"),
}
TREES = "d5b3,d7b2,d4b5,d3b11,auto"
METHODS = "specinfer,sequoia,resispec,ers,deterministic,optimal"
NODES = (1, 2, 4, 8, 16, 24, 32, 48, 64, 80, 96, 112, 121, 127, 128, 133, 144, 156, 160)
DEFAULTS = {  # per --scale: prefix tokens, new tokens of the timed generation
    "paper": {"prefix": 512, "new_tokens": 64},
    "tiny": {"prefix": 32, "new_tokens": 16},
}


class EngineCheckFailed(RuntimeError):
    """The engine does not work on this machine's torch / transformers: timing it would measure nothing."""


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


def check_requirements() -> list[str]:
    """One line per missing or too old package (empty when everything is there)."""
    problems = []
    if sys.version_info < (3, 11):  # noqa: UP036 - a GPU machine's Python, not this package's install
        problems.append(f"Python {sys.version.split()[0]}: need >= 3.11")
    for dist, (minimum, why) in REQUIREMENTS.items():
        try:
            found = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            problems.append(f"{dist}: missing (needed for {why})")
            continue
        if minimum is not None and _version(found) < minimum:
            need = ".".join(map(str, minimum))
            problems.append(f"{dist} {found}: need >= {need} ({why})")
    return problems


def _args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m resispec.bench gpu",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    parser.add_argument("--scale", default="paper", choices=("paper", "tiny"), help="model sizes")
    parser.add_argument(
        "--dtype", default=None, help="float16 / bfloat16 / float32 (default: float16, float32 on a CPU)"
    )
    parser.add_argument("--trees", default=TREES)
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--prefix", type=int, default=None, help="prompt tokens (paper 512, tiny 32)")
    parser.add_argument("--new-tokens", type=int, default=None, help="timed generation (paper 64, tiny 16)")
    parser.add_argument("--warmup-tokens", type=int, default=8, help="untimed warm-up generation")
    parser.add_argument("--sync-tokens", type=int, default=24, help="host-sync count run (0: skip)")
    parser.add_argument("--nodes", default=",".join(map(str, NODES)), help="target forward sizes")
    parser.add_argument("--repeats", type=int, default=10, help="timed forwards per size")
    parser.add_argument("--warmup", type=int, default=3, help="untimed forwards per size")
    parser.add_argument(
        "--compile",
        default="none",
        metavar="MODE",
        help="generate(compile_mode=MODE): none (default: eager, so the whole matrix fits "
        "the budget), reduce-overhead (CUDA graphs; minutes of compiling per tree shape: "
        "use with --trees d5b3 --methods specinfer,optimal), auto (the engine's per-device "
        "choice)",
    )
    parser.add_argument(
        "--no-engine-check", action="store_true", help="time the engine even when its greedy check fails"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (CPU)")
    parser.add_argument("--json", default=None, help="output (default results/bench/gpu-SCALE.json)")
    args = parser.parse_args(argv)
    for key, value in DEFAULTS[args.scale].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.prefix < 2 or args.new_tokens < 2:
        raise ValueError(f"--prefix and --new-tokens must be >= 2, got {args.prefix!r}, {args.new_tokens!r}")
    args.json = args.json or f"results/bench/gpu-{args.scale}.json"
    return args


def _device(args):
    import torch

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"--device {args.device!r}: torch {torch.__version__} sees no CUDA GPU; "
            "use --device cpu --scale tiny for a CPU check"
        )
    dtype = args.dtype or ("float32" if device.type == "cpu" else "float16")
    if dtype not in ("float16", "bfloat16", "float32"):
        raise ValueError(f"--dtype must be float16, bfloat16 or float32, got {dtype!r}")
    return device, getattr(torch, dtype)


def _environment(device, dtype) -> dict:
    import torch
    import transformers

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    return {
        "device": str(device),
        "device_name": name,
        "dtype": str(dtype).removeprefix("torch."),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "python": sys.version.split()[0],
        "threads": torch.get_num_threads(),
    }


def _engine_check(device, seed: int, compile_mode: str | None) -> dict:
    """The engine, with the pass's ``compile_mode``, against transformers' greedy generation on a tiny
    float32 pair on ``device``."""
    import torch

    from resispec.bench.gpu_compat import engine_check
    from resispec.bench.gpu_pair import TINY, build_pair

    generator = torch.Generator().manual_seed(seed)
    prefix = torch.randint(3, TINY["vocab_size"], (24,), generator=generator).to(device)  # [24]
    target, draft, _ = build_pair("tiny", device, torch.float32, prefix, seed=seed)
    return engine_check(target, draft, prefix, compile_mode)


def _level_widths(trees) -> list[int]:
    """Node counts of the levels a drafter forwards (every level with children but the root's)."""
    widths = {1}
    for tree in trees:
        for depth in range(1, tree.depth - 1):
            widths.add(tree.depths.count(depth))
    return sorted(widths)


def _progress(done: int, total: int, start: float, what: str) -> None:
    elapsed = time.perf_counter() - start
    eta = elapsed / done * (total - done)
    print(f"[bench gpu] {done}/{total} {what}: {elapsed:.0f} s, ETA {eta:.0f} s", file=sys.stderr, flush=True)


def _configs(target, draft, prompt, args) -> list[tuple[str, str, object]]:
    """(tree label, method, Tree) of every timed configuration, tree by tree."""
    from resispec.bench.gpu_timing import auto_trees
    from resispec.decoding.tree_specs import resolve

    methods, specs = args.methods.split(","), args.trees.split(",")
    auto = {}
    if "auto" in specs:
        print("[bench gpu] measuring the pair profile for tree auto", file=sys.stderr, flush=True)
        auto = auto_trees(target, draft, prompt, methods, args.temperature, compile_mode=args.compile)
    return [(spec, m, auto[m] if spec == "auto" else resolve(spec)) for spec in specs for m in methods]


def _engine_rows(target, draft, prompt, args, rows: list, save) -> None:
    """Append one row per (tree, method) to ``rows``, saving the JSON after each (a run cut short by a
    time limit keeps what it measured)."""
    from resispec.bench.gpu_timing import engine_config, prefill_seconds

    keys = ("temperature", "new_tokens", "warmup_tokens", "sync_tokens", "seed", "compile")
    settings = {key: getattr(args, key) for key in keys}
    configs = _configs(target, draft, prompt, args)
    prefill_s = prefill_seconds(target, draft, prompt, tree=configs[0][2], settings=settings)
    start = time.perf_counter()
    for label, method, tree in configs:
        rows.append(
            engine_config(
                target,
                draft,
                prompt,
                label=label,
                tree=tree,
                method=method,
                settings=settings,
                prefill_s=prefill_s,
            )
        )
        save()
        _progress(len(rows), len(configs), start, f"{label} ({tree.num_nodes} nodes) {method}")


def run(args, result: dict, save) -> None:
    """Build the pair, time the forwards and the engine, filling ``result`` (what the JSON holds) and
    calling ``save()`` after each stage."""
    import torch

    from resispec.bench.engine_runs import compile_supported
    from resispec.bench.gpu_pair import build_pair, pair_configs, single_candidate_acceptance
    from resispec.bench.gpu_timing import forward_times
    from resispec.decoding.tree_specs import resolve
    from resispec.verify import METHODS

    if unknown := [m for m in args.methods.split(",") if m not in METHODS]:
        raise ValueError(f"--methods: unknown {unknown}; known: {', '.join(sorted(METHODS))}")
    device, dtype = _device(args)
    if args.threads:
        torch.set_num_threads(args.threads)
    fixed = [resolve(spec) for spec in args.trees.split(",") if spec != "auto"]
    result.update(environment=_environment(device, dtype), settings=vars(args).copy())
    result["settings"]["compile_passed"] = args.compile is not None and compile_supported()
    vocab = pair_configs(args.scale)[0]["vocab_size"]
    generator = torch.Generator().manual_seed(args.seed)
    prefix = torch.randint(3, vocab, (args.prefix,), generator=generator).to(device)  # [P] random tokens
    result["engine_check"] = check = _engine_check(device, args.seed, args.compile)
    if not check["ok"] and not args.no_engine_check:
        raise EngineCheckFailed(
            f"greedy tree decoding does not reproduce transformers' greedy generation on "
            f"this machine: {check}"
        )
    target, draft, result["pair"] = build_pair(args.scale, device, dtype, prefix, seed=args.seed)
    result["pair"].update(single_candidate_acceptance(target, draft, prefix, args.temperature))
    result["pair"]["build_s"] = time.perf_counter() - result["start"]
    print(f"[bench gpu] pair built at {result['pair']['build_s']:.0f} s; timing forwards", file=sys.stderr)
    forwards = {"repeats": args.repeats, "warmup": args.warmup}
    nodes = [int(n) for n in args.nodes.split(",")]
    result["target_forward"] = forward_times(target, prefix, nodes, **forwards)
    result["draft_level"] = forward_times(draft, prefix, _level_widths(fixed), **forwards)
    save()
    result["engine"] = []
    _engine_rows(target, draft, prefix, args, result["engine"], save)


def third_party_imports() -> list[str]:
    """Top-level modules imported so far that are neither the standard library nor this package."""
    names = {name.split(".")[0] for name in sys.modules}
    ours = {"resispec", "__main__", "__mp_main__", "cython_runtime"}  # (cython_runtime: no package)
    return sorted(n for n in names - ours if n not in sys.stdlib_module_names and not n.startswith("_"))


def main(argv=None) -> int:
    start = time.perf_counter()
    args = _args(argv)
    if problems := check_requirements():
        print("bench gpu cannot run here:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 2
    from resispec.bench.gpu_report import goal_lines, print_report

    path = Path(args.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    result = {"complete": False, "start": start}

    def save() -> None:
        result["elapsed_s"] = time.perf_counter() - start
        result["third_party_imports"] = third_party_imports()
        path.write_text(json.dumps({k: v for k, v in result.items() if k != "start"}, indent=1))

    try:
        run(args, result, save)
    except EngineCheckFailed as error:
        save()
        print(f"bench gpu stopped: {error} (JSON {path}; --no-engine-check times it anyway)", file=sys.stderr)
        return 3
    result.update(goals=goal_lines(result), complete=True)
    save()
    print_report(result)
    print(f"JSON: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
