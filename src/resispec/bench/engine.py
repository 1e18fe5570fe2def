"""Benchmark: autoregressive vs HF assisted generation vs tree speculative decoding on one model pair.

``python -m resispec.bench engine --target DIR --draft DIR [--trees chain4,d4b2,d5b3] [--methods ...]``
prints tokens/s (median over round-robin repeats) and accepted length per configuration, as ratios to
plain autoregressive ``generate``.
Accepted length: new tokens per target forward (autoregressive: 1; assisted: counted with a forward
hook; engine: mean tokens committed per step).
"""

from __future__ import annotations

import argparse
import json
import statistics
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
    parser.add_argument("--target", help="target model directory (HF format)")
    parser.add_argument("--draft", help="draft model directory (same tokenizer)")
    parser.add_argument(
        "--synthetic",
        metavar="DIR",
        help="instead of --target/--draft: build (once) and use a synthetic random pair in DIR",
    )
    parser.add_argument("--trees", default="chain4,d4b2,d5b3")
    parser.add_argument("--methods", default="specinfer,sequoia,ers,resispec")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--prompts", type=int, default=len(DEFAULT_PROMPTS), help="how many embedded prompts")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (CPU)")
    parser.add_argument("--repeats", type=int, default=3, help="round-robin repeats; median time is kept")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    return parser.parse_args(argv)


def _prompt_ids(target_dir, count, device, vocab):
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(target_dir)
        texts = [DEFAULT_PROMPTS[i % len(DEFAULT_PROMPTS)] for i in range(count)]
        return [tokenizer(t, return_tensors="pt").input_ids[0].to(device) for t in texts]
    except (OSError, ValueError):  # no tokenizer saved: fixed pseudo-random prompts
        gen = torch.Generator().manual_seed(0)
        return [torch.randint(3, min(100, vocab), (12,), generator=gen).to(device) for _ in range(count)]


class _ForwardCounter:
    def __init__(self, model):
        self.calls = 0
        self.handle = model.register_forward_hook(self._hook)

    def _hook(self, *_):
        self.calls += 1


def _hf_run(target, prompts, args, assistant=None):
    """Plain or assisted HF generate; returns (new tokens, seconds, target forwards after prefill)."""
    counter = _ForwardCounter(target)
    with torch.random.fork_rng():  # HF sampling draws from the global generator: seed a scoped copy
        torch.manual_seed(args.seed)
        tokens, seconds = _hf_generate(target, prompts, args, assistant)
    counter.handle.remove()
    return tokens, seconds, max(counter.calls - len(prompts), 1)


def _hf_generate(target, prompts, args, assistant):
    tokens, seconds = 0, 0.0
    for ids in prompts:
        start = time.perf_counter()
        out = target.generate(
            ids[None], attention_mask=torch.ones_like(ids[None]), max_new_tokens=args.max_new_tokens,
            do_sample=args.temperature > 0, temperature=args.temperature or None, top_k=None, top_p=None,
            assistant_model=assistant, pad_token_id=target.generation_config.eos_token_id,
        )  # fmt: skip
        seconds += time.perf_counter() - start
        tokens += out.shape[1] - len(ids)
    return tokens, seconds


def _engine_run(target, draft, prompts, args, method, tree):
    from resispec.decoding.engine import generate

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
    from resispec.decoding.trees import parse
    from resispec.models.loading import load_model

    args = _args(argv)
    if args.synthetic:
        args.target, args.draft = synthetic_pair(args.synthetic)
    if not (args.target and args.draft):
        raise ValueError("give --target and --draft model directories, or --synthetic DIR")
    if args.threads:
        torch.set_num_threads(args.threads)
    target = load_model(args.target, device=args.device, dtype=args.dtype)
    draft = load_model(args.draft, device=args.device, dtype=args.dtype)
    prompts = _prompt_ids(args.target, args.prompts, args.device, target.config.vocab_size)
    _engine_run(target, draft, prompts[:1], argparse.Namespace(**{**vars(args), "max_new_tokens": 4}),
                "specinfer", "d3b2")  # fmt: skip  # warm-up
    methods = args.methods.split(",") if args.temperature > 0 else ["greedy"]
    configs = [("autoregressive", "-", "-"), ("hf_assisted", "chain(dynamic)", "hf")]
    configs += [("engine", tree, method) for tree in args.trees.split(",") for method in methods]
    totals = {config: [0, [], 0] for config in configs}  # tokens, seconds per repeat, target forwards
    for _ in range(args.repeats):  # round-robin so that machine load drifts hit every configuration
        for config in configs:
            system, tree, method = config
            if system == "engine":
                tokens, seconds, forwards = _engine_run(target, draft, prompts, args, method, parse(tree))
            else:
                assistant = draft if system == "hf_assisted" else None
                tokens, seconds, forwards = _hf_run(target, prompts, args, assistant=assistant)
            totals[config][0] += tokens
            totals[config][1].append(seconds * args.repeats)  # scaled to the whole run
            totals[config][2] += forwards
    rows = [
        _row(*config, tokens, statistics.median(seconds), tokens / max(forwards, 1))
        for config, (tokens, seconds, forwards) in totals.items()
    ]
    base = rows[0]["tokens_per_s"]
    for row in rows:
        row["speedup"] = row["tokens_per_s"] / base
    return rows


def synthetic_pair(root, vocab=4096, hidden=256, layers=8, draft_layers=2, seed=0) -> tuple[str, str]:
    """A random Llama target whose layers after ``draft_layers`` are damped residual updates (output
    projections scaled by 0.15, embeddings by 4) and a draft made of its first ``draft_layers`` layers:
    a cheap pair with high, not perfect, agreement, standing in for a trained pair.
    Returns (target_dir, draft_dir)."""
    from pathlib import Path

    from transformers import LlamaConfig, LlamaForCausalLM

    root = Path(root)
    target_dir, draft_dir = root / "target", root / "draft"
    if (target_dir / "config.json").is_file() and (draft_dir / "config.json").is_file():
        return str(target_dir), str(draft_dir)
    config = LlamaConfig(
        vocab_size=vocab, hidden_size=hidden, intermediate_size=4 * hidden, num_hidden_layers=layers,
        num_attention_heads=hidden // 64, num_key_value_heads=hidden // 64, max_position_embeddings=2048,
        initializer_range=0.05, bos_token_id=1, eos_token_id=2, pad_token_id=2, tie_word_embeddings=True,
    )  # fmt: skip
    with torch.random.fork_rng():  # transformers initialises weights from the global generator
        torch.manual_seed(seed)
        target = LlamaForCausalLM(config).eval()
    with torch.no_grad():
        target.model.embed_tokens.weight.mul_(4.0)  # peakier next-token distributions
        for layer in target.model.layers[draft_layers:]:
            layer.self_attn.o_proj.weight.mul_(0.15)
            layer.mlp.down_proj.weight.mul_(0.15)
    target.save_pretrained(target_dir)
    draft = LlamaForCausalLM(LlamaConfig(**{**config.to_dict(), "num_hidden_layers": draft_layers})).eval()
    state = {k: v for k, v in target.state_dict().items() if not k.startswith("model.layers.")}
    state.update({k: v for k, v in target.state_dict().items() if _layer_index(k) in range(draft_layers)})
    draft.load_state_dict(state, strict=False)
    draft.save_pretrained(draft_dir)
    return str(target_dir), str(draft_dir)


def _layer_index(key: str) -> int:
    parts = key.split(".")
    return int(parts[2]) if key.startswith("model.layers.") else -1


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
