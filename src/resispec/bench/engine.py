"""Benchmark: autoregressive vs HF assisted generation vs tree speculative decoding on one model pair.

``python -m resispec.bench engine --target DIR --draft DIR [--trees chain4,d4b2,d5b3] [--methods ...]``
prints tokens/s and accepted length per configuration, as ratios to plain autoregressive ``generate``.
Accepted length: new tokens per target forward (autoregressive: 1; assisted: counted with a forward
hook; engine: mean tokens committed per step).
"""

from __future__ import annotations

import argparse
import json
import time

import torch

DEFAULT_PROMPTS = (
    "The history of the printing press begins",
    'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n',
    "Question: Why is the sky blue?\nAnswer:",
    "Once upon a time, in a small village by the sea,",
)


def _args(argv):
    parser = argparse.ArgumentParser(prog="python -m resispec.bench engine", description=__doc__)
    parser.add_argument("--target", required=True, help="target model directory (HF format)")
    parser.add_argument("--draft", required=True, help="draft model directory (same tokenizer)")
    parser.add_argument("--trees", default="chain4,d4b2,d5b3")
    parser.add_argument("--methods", default="specinfer,sequoia,ers,resispec")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--prompts", type=int, default=len(DEFAULT_PROMPTS), help="how many embedded prompts")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    return parser.parse_args(argv)


def _prompt_ids(target_dir, count, device):
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(target_dir)
        texts = [DEFAULT_PROMPTS[i % len(DEFAULT_PROMPTS)] for i in range(count)]
        return [tokenizer(t, return_tensors="pt").input_ids[0].to(device) for t in texts]
    except (OSError, ValueError):  # no tokenizer saved: fixed pseudo-random prompts
        gen = torch.Generator().manual_seed(0)
        return [torch.randint(3, 100, (12,), generator=gen).to(device) for _ in range(count)]


class _ForwardCounter:
    def __init__(self, model):
        self.calls = 0
        self.handle = model.register_forward_hook(self._hook)

    def _hook(self, *_):
        self.calls += 1


def _hf_run(target, prompts, args, assistant=None):
    """Plain or assisted HF generate; returns (new tokens, seconds, target forwards after prefill)."""
    counter = _ForwardCounter(target)
    tokens, seconds = 0, 0.0
    torch.manual_seed(args.seed)  # HF sampling uses the global generator (benchmark script only)
    for ids in prompts:
        start = time.perf_counter()
        out = target.generate(
            ids[None], attention_mask=torch.ones_like(ids[None]), max_new_tokens=args.max_new_tokens,
            do_sample=args.temperature > 0, temperature=args.temperature or None, top_k=None, top_p=None,
            assistant_model=assistant, pad_token_id=target.generation_config.eos_token_id,
        )  # fmt: skip
        seconds += time.perf_counter() - start
        tokens += out.shape[1] - len(ids)
    counter.handle.remove()
    return tokens, seconds, max(counter.calls - len(prompts), 1)


def _engine_run(target, draft, prompts, args, method, tree):
    from resispec.engine import generate

    generator = torch.Generator(device=args.device).manual_seed(args.seed)
    tokens, seconds, steps = 0, 0.0, 0
    for ids in prompts:
        out = generate(
            target, draft, ids, method=method, tree=tree, temperature=args.temperature,
            max_new_tokens=args.max_new_tokens, generator=generator,
        )  # fmt: skip
        tokens, seconds, steps = tokens + len(out.tokens), seconds + out.wall_s, steps + len(out.steps)
    return tokens, seconds, steps


def run(argv=None) -> list[dict]:
    from resispec.models import load_model
    from resispec.trees import parse

    args = _args(argv)
    target = load_model(args.target, device=args.device, dtype=args.dtype)
    draft = load_model(args.draft, device=args.device, dtype=args.dtype)
    prompts = _prompt_ids(args.target, args.prompts, args.device)
    _engine_run(target, draft, prompts[:1], argparse.Namespace(**{**vars(args), "max_new_tokens": 4}),
                "specinfer", "d3b2")  # fmt: skip  # warm-up
    rows = []
    tokens, seconds, forwards = _hf_run(target, prompts, args)
    rows.append(_row("autoregressive", "-", "-", tokens, seconds, tokens / forwards))
    tokens, seconds, forwards = _hf_run(target, prompts, args, assistant=draft)
    rows.append(_row("hf_assisted", "chain(dynamic)", "hf", tokens, seconds, tokens / forwards))
    methods = args.methods.split(",") if args.temperature > 0 else ["greedy"]
    for tree in args.trees.split(","):
        for method in methods:
            tokens, seconds, steps = _engine_run(target, draft, prompts, args, method, parse(tree))
            rows.append(_row("engine", tree, method, tokens, seconds, tokens / max(steps, 1)))
    base = rows[0]["tokens_per_s"]
    for row in rows:
        row["speedup"] = row["tokens_per_s"] / base
    return rows


def _row(system, tree, method, tokens, seconds, accepted):
    return {"system": system, "tree": tree, "method": method, "tokens": tokens, "seconds": seconds,
            "tokens_per_s": tokens / max(seconds, 1e-9), "accepted_length": accepted}  # fmt: skip


def main(argv=None) -> int:
    rows = run(argv)
    args = _args(argv)
    print(f"{'system':<15}{'tree':<16}{'method':<11}{'tok/s':>9}{'x AR':>8}{'acc.len':>9}")
    for r in rows:
        print(
            f"{r['system']:<15}{r['tree']:<16}{r['method']:<11}{r['tokens_per_s']:>9.2f}"
            f"{r['speedup']:>8.2f}{r['accepted_length']:>9.2f}"
        )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
