"""How many tokens the timing pass's warm-up needs: each method's step times on the first prompts a fresh
process decodes after ``DecodeSession.prepare`` (caches sized, graphs built), with no warm-up prompt.

    python -m resispec.bench warm_up --target results/models/smollm2-135m \\
        --draft results/models/draft-default --prompts results/prompts/smollm2-135m/cnn_dailymail.jsonl

The methods are interleaved per prompt as the timing pass does (`decoding.order.interleaved`). Per method
the table prints the first prompt's step times, step by step, over the *steady* step time (the median
step of the later prompts, first steps left out): a cold cost shows as a ratio above 1, and the step at
which the ratios reach 1 is the warm-up a method needs. A step's time is the sum of its record's parts.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

COLUMNS = 8  # first-prompt steps shown


def step_seconds(output) -> list[float]:
    """Per step of a ``GenerateOutput``, the sum of its parts (seconds)."""
    parts = ("draft", "target", "verify", "shaping", "commit")
    return [sum(getattr(step, f"time_{p}_s") for p in parts) for step in output.steps]


def session_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The options of a benchmark that decodes a run's prompts in a ``DecodeSession`` (this one and
    ``audit_logging``)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--target", type=Path, required=True, help="target model directory")
    parser.add_argument("--draft", type=Path, required=True, help="draft model directory")
    parser.add_argument("--prompts", type=Path, required=True, help="prompts JSONL")
    parser.add_argument("--num-prompts", type=int, default=4, help="prompts (the first is the cold one)")
    parser.add_argument("--tree", default="d5b3")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--methods", default="specinfer,resispec,ers,optimal,autoregressive")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    return parser


def open_session(args, run: str):
    """(session, job, prompts): the run's models loaded as the timing pass loads them, caches sized and
    graphs built (``DecodeSession.prepare``); torch on ``args.threads`` threads."""
    import torch

    from resispec.corpora import read_prompts
    from resispec.decoding.session import DecodeSession

    torch.set_num_threads(args.threads)
    job = {"run": run, "target": str(args.target), "draft": str(args.draft), "dataset": "-"}
    job |= {"temperature": args.temperature, "tree": args.tree, "methods": args.methods.split(",")}
    settings = {"device": args.device, "dtype": "float32", "compile": "auto", "seed": 0}
    prompts = read_prompts(args.prompts)[: args.num_prompts]
    session = DecodeSession.open(job, settings, args.target, args.draft)
    session.prepare(prompts)
    return session, job, prompts


def main(argv=None) -> int:
    from resispec.decoding.order import interleaved, prompt_seed

    args = session_parser("python -m resispec.bench warm_up", __doc__).parse_args(argv)
    session, job, prompts = open_session(args, "warm-up")
    methods = job["methods"]
    times: dict[str, list[list[float]]] = {m: [] for m in methods}
    for method, prompt in interleaved(methods, prompts, set()):
        output = session.generate(method, prompt, prompt_seed(0, job, prompt["prompt_id"]))
        times[method].append(step_seconds(output))
    print(
        f"first prompt's step k over the steady step (median of prompts 2-{len(prompts)}, steps 2+), "
        f"{args.tree}, T={args.temperature:g}, {args.threads} threads, {args.device}"
    )
    print(f"{'method':<16}{'steady ms':>10}" + "".join(f"{f'k={k}':>7}" for k in range(1, COLUMNS + 1)))
    for method, prompts_steps in times.items():
        steady = statistics.median(s for steps in prompts_steps[1:] for s in steps[1:])
        ratios = [s / steady for s in prompts_steps[0][:COLUMNS]]
        print(f"{method:<16}{steady * 1e3:>10.1f}" + "".join(f"{r:>7.2f}" for r in ratios))
    return 0
