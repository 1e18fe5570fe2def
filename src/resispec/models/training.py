"""The deterministic training loop shared by drafts and EAGLE heads: budgets, schedule, progress.

Budgets are counted in tokens and steps only: `teacher_tokens` target-labelled tokens (the teacher pass),
then `steps` optimiser steps of `batch_size` rows of `seq_len` tokens, so a run does the same work on any
machine, however loaded. Wall-clock seconds are measured and reported, never used to stop.

Determinism: batches come from a `torch.Generator` seeded with `seed`; the learning rate depends on the
step only. On CPU the bits of a GEMM depend on the number of intra-op threads: oneDNN's bfloat16 kernels
(every linear layer, forward and backward) and MKL's float32 kernels with a long reduction (e.g. the
input gradient of the LM head, K = vocabulary) partition the reduction dimension and pick kernels by
thread count, and neither `torch.use_deterministic_algorithms` nor `torch.backends.mkldnn.deterministic`
changes that (measured: docs/reproduction-notes.md). Training therefore runs with a fixed thread count,
`threads`, part of the options like the seed: the same options give the same weights whatever the
caller's `torch.set_num_threads`, on the same hardware and library versions.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass

import torch

from resispec.models.precision import cpu_has_bfloat16

log = logging.getLogger(__name__)

WARMUP_STEPS = 30  # linear warm-up: AdamW's moment estimates are unreliable in the first steps
FINAL_LR_FRACTION = 0.1  # the cosine schedule ends at 10% of the peak learning rate
GRAD_CLIP = 1.0  # global gradient-norm clip


@dataclass(frozen=True)
class TrainOptions:
    """Budget and optimiser settings shared by draft distillation and EAGLE-head training.

    `teacher_tokens`: tokens the target labels (rounded down to whole `seq_len` chunks, at most the
    corpus); `steps` x `batch_size` x `seq_len`: tokens trained on (epochs over the teacher's chunks).
    `temperatures`: the teacher's distributions are kept at each; the loss averages over them.
    `loss`: "kl" (forward KL), "tv" (total variation, 1 - acceptance) or "kl+tv".
    """

    steps: int = 1000
    teacher_tokens: int = 200_000
    seed: int = 0
    device: str = "cpu"
    threads: int = 1
    seq_len: int = 128
    batch_size: int = 8
    lr: float = 1e-3
    top_k: int = 64
    temperatures: tuple[float, ...] = (1.0,)
    loss: str = "kl"
    amp: bool | None = None
    log_every: int = 50

    def __post_init__(self) -> None:
        for name in ("steps", "teacher_tokens", "threads", "seq_len", "batch_size", "top_k", "log_every"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if not self.temperatures or any(t <= 0 for t in self.temperatures):
            raise ValueError(f"temperatures must be positive, got {self.temperatures!r}")
        if self.loss not in LOSSES:
            raise ValueError(f"loss {self.loss!r} must be one of {LOSSES}")
        object.__setattr__(self, "temperatures", tuple(float(t) for t in self.temperatures))

    @property
    def use_amp(self) -> bool:
        """bfloat16 autocast (``amp``; None: on CUDA, and on a CPU only where it has native bfloat16)."""
        if self.amp is not None:
            return self.amp
        if self.device == "cpu":
            return cpu_has_bfloat16()
        return self.device.startswith("cuda")

    @property
    def train_tokens(self) -> int:
        return self.steps * self.batch_size * self.seq_len

    def report(self) -> dict:
        """The options as a training report's JSON object (temperatures as a list, ``amp`` as it ran)."""
        return {**asdict(self), "temperatures": list(self.temperatures), "amp": self.use_amp}


LOSSES = ("kl", "tv", "kl+tv")


@contextlib.contextmanager
def pinned_threads(threads: int) -> Iterator[None]:
    """Run the block with `threads` intra-op threads (see the module docstring), then restore."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def lr_factor(step: int, steps: int, warmup: int = WARMUP_STEPS) -> float:
    """Linear warm-up over `warmup` steps, then cosine decay to FINAL_LR_FRACTION at `steps`."""
    ramp = min(1.0, step / warmup)
    progress = min(step / steps, 1.0)
    return ramp * (FINAL_LR_FRACTION + (1 - FINAL_LR_FRACTION) * 0.5 * (1.0 + math.cos(math.pi * progress)))


class Progress:
    """Logs `done`/`total` units with a rate and an ETA every `every` updates (and the first/last)."""

    def __init__(self, label: str, total: int, unit: str, every: int) -> None:
        self.label, self.total, self.unit, self.every = label, total, unit, every
        self.start, self.count = time.monotonic(), 0

    def update(self, done: int, extra: str = "") -> None:
        self.count += 1
        if self.count != 1 and self.count % self.every and done < self.total:
            return
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = done / elapsed
        eta = (self.total - done) / rate if rate > 0 else float("inf")
        log.info(
            "%s %d/%d %s, %.0f %s/s, ETA %.0f s%s",
            self.label,
            done,
            self.total,
            self.unit,
            rate,
            self.unit,
            eta,
            f", {extra}" if extra else "",
        )

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.start


def batches(n_rows: int, opts: TrainOptions, generator: torch.Generator) -> Iterator[torch.Tensor]:
    """Row indices of each step's batch: epochs of seeded permutations of `n_rows`, `steps` batches."""
    order, cursor = torch.randperm(n_rows, generator=generator), 0
    for _ in range(opts.steps):
        if cursor + opts.batch_size > n_rows:
            order, cursor = torch.randperm(n_rows, generator=generator), 0
        yield order[cursor : cursor + opts.batch_size]
        cursor += opts.batch_size


def train_steps(
    params: Sequence[torch.nn.Parameter],
    loss_of: Callable[[torch.Tensor], torch.Tensor],
    n_rows: int,
    opts: TrainOptions,
    *,
    label: str,
    generator: torch.Generator,
) -> list[float]:
    """`opts.steps` AdamW steps on `loss_of(batch_row_indices)`; returns the loss of every step."""
    optimizer = torch.optim.AdamW(params, lr=opts.lr, betas=(0.9, 0.98), weight_decay=0.0)
    progress = Progress(f"{label} step", opts.steps, "steps", opts.log_every)
    losses = []
    for step, index in enumerate(batches(n_rows, opts, generator), start=1):
        for group in optimizer.param_groups:
            group["lr"] = opts.lr * lr_factor(step, opts.steps)
        loss = loss_of(index)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, GRAD_CLIP)
        optimizer.step()
        losses.append(loss.item())
        progress.update(step, f"loss {losses[-1]:.4f}")
    return losses


def loss_summary(losses: Sequence[float]) -> dict:
    """Steps and the mean loss over the first and the last 20 steps (fewer for short runs)."""
    window = max(1, min(20, len(losses) // 5))
    return {
        "steps": len(losses),
        "loss_first": sum(losses[:window]) / window,
        "loss_last": sum(losses[-window:]) / window,
    }


def training_cost(
    opts: TrainOptions,
    teacher_tokens: int,
    *,
    start: float,
    teacher_seconds: float,
    train_start: float,
    load_start: float | None,
) -> dict:
    """The ``cost`` block of a training report: budgets, teacher and trained tokens, wall-clock seconds
    (``time.monotonic`` marks of the run and its training phase) and the load before and after."""
    now = time.monotonic()
    return {
        "steps": opts.steps,
        "teacher_tokens": teacher_tokens,
        "train_tokens": opts.train_tokens,
        "teacher_seconds": round(teacher_seconds, 1),
        "train_seconds": round(now - train_start, 1),
        "seconds": round(now - start, 1),
        "threads": opts.threads,
        "load_average": [load_start, machine_load()],
    }


def machine_load() -> float | None:
    """The 1-minute load average (None where the OS has none): stated beside wall-clock costs."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None
