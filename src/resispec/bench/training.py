"""EAGLE-head training steps with and without huge pages for torch's CPU allocator
(`resispec.models.allocator`), on the real target and the default head's shapes (reduced vocabulary of
8192, batches of 8 x 128 tokens, bfloat16 autocast, one thread): each measurement is a fresh process (torch
reads the setting once, at its first allocation), the two settings alternate ABBA, and every process
trains from the same seed on the same synthetic teacher labels.

    python -m resispec.bench training --target results/models/smollm2-135m --rounds 4 --steps 30

Prints each process's seconds per step (after ``--warmup`` steps) and the ratio of seconds per step with
huge pages over without, with a paired bootstrap interval over rounds, and whether both settings ended on
bitwise the same weights.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from resispec.bench.paired import paired_ratio
from resispec.models.allocator import HUGE_PAGES_VARIABLE

CHUNKS, SEQ_LEN, VOCAB = 64, 128, 8192


def child(target_dir: str, steps: int, warmup: int) -> dict:
    """Train a fresh head for ``warmup + steps`` steps; the seconds of the last ``steps`` and a digest of
    the weights."""
    import hashlib
    import time

    import torch

    from resispec.models.distill import TeacherTargets
    from resispec.models.eagle_head import new_eagle_head
    from resispec.models.eagle_training import eagle_loss
    from resispec.models.loading import load_model
    from resispec.models.reduced_vocab import draft_vocabulary
    from resispec.models.training import TrainOptions, pinned_threads, train_steps

    opts = TrainOptions(steps=warmup + steps, teacher_tokens=CHUNKS * SEQ_LEN, seq_len=SEQ_LEN, threads=1)
    with pinned_threads(opts.threads):
        target = load_model(target_dir, dtype="float32")
        generator = torch.Generator().manual_seed(opts.seed)
        vocab = target.config.vocab_size
        chunks = torch.randint(0, vocab, (CHUNKS, SEQ_LEN), generator=generator)
        kept = draft_vocabulary(target.config, chunks, min(VOCAB, vocab // 2))
        head = new_eagle_head(target, generator, kept)
        top = torch.softmax(torch.randn(CHUNKS, SEQ_LEN, opts.top_k, generator=generator), -1) * 0.9
        labels = TeacherTargets(
            tokens=chunks,
            indices=torch.randint(0, vocab, (CHUNKS, SEQ_LEN, opts.top_k), generator=generator).int(),
            probs={1.0: top.half()},
            features=torch.randn(CHUNKS, SEQ_LEN, target.config.hidden_size, generator=generator).bfloat16(),
        )
        stamps = []

        def loss_of(index):
            stamps.append(time.perf_counter())
            return eagle_loss(head, labels, index, opts)

        params = [p for p in head.parameters() if p.requires_grad]
        train_steps(params, loss_of, CHUNKS, opts, label="bench", generator=generator)
        end = time.perf_counter()
    digest = hashlib.sha256(b"".join(p.detach().float().numpy().tobytes() for p in params)).hexdigest()
    return {"seconds": end - stamps[warmup], "steps": steps, "weights": digest[:16]}


def measure(target: str, steps: int, warmup: int, huge_pages: bool) -> dict:
    env = dict(os.environ, **{HUGE_PAGES_VARIABLE: "1" if huge_pages else "0"})
    argv = [sys.executable, "-m", "resispec.bench.training", "--child", "--target", target]
    argv += ["--steps", str(steps), "--warmup", str(warmup)]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"bench training: the measuring process failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m resispec.bench training", description=__doc__)
    parser.add_argument("--target", required=True, help="target model directory")
    parser.add_argument("--rounds", type=int, default=4, help="pairs of processes (ABBA order)")
    parser.add_argument("--steps", type=int, default=30, help="timed steps per process")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.target, args.steps, args.warmup)))
        return 0
    runs = {False: [], True: []}
    for round_ in range(args.rounds):
        order = (False, True) if round_ % 2 == 0 else (True, False)
        for huge in order:
            runs[huge].append(measure(args.target, args.steps, args.warmup, huge))
            print(
                f"round {round_ + 1} huge pages {'on ' if huge else 'off'}: "
                f"{runs[huge][-1]['seconds'] / args.steps:.4f} s/step"
            )
    steps = [r["steps"] for r in runs[False]]
    ratio = paired_ratio(
        steps, [r["seconds"] for r in runs[False]], steps, [r["seconds"] for r in runs[True]]
    )
    same = {r["weights"] for r in runs[False] + runs[True]}
    from resispec.report.environment import collect_environment

    environment = collect_environment()
    print(
        f"EAGLE-head training, 1 thread; CPU {environment['CPU']}, accelerators {environment['accelerators']}"
    )
    print(
        f"seconds per step, huge pages on / off: {ratio.value:.3f} [{ratio.low:.3f}, {ratio.high:.3f}] "
        f"(95%, {args.rounds} paired rounds); same weights: {len(same) == 1}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
