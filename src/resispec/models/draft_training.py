"""Draft models distilled from a target: building the draft, the training run, its report, saving.

A draft may use at most `max_compute_ratio` (15%) of the target's MACs per token (`resispec.models.compute`,
LM head included: a reduced-vocabulary head counts its V' rows); its acceptance is measured by
`resispec.models.acceptance` at T = 1 and 0.6 on held-out documents, before and after training.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

import torch

from resispec.models.acceptance import HeldoutTarget, acceptances
from resispec.models.compute import compute_ratio
from resispec.models.distill import TeacherTargets, load_teacher, tempered_loss
from resispec.models.draft_init import DraftArch, draft_config, init_from_target, init_random
from resispec.models.reduced_vocab import CONFIG_KEY, ReducedVocabHead, attach, draft_vocabulary
from resispec.models.teacher import load_parts, model_targets
from resispec.models.training import (
    TrainOptions,
    loss_summary,
    machine_load,
    pinned_threads,
    train_steps,
    training_cost,
)

log = logging.getLogger(__name__)

REPORT_TEMPERATURES = (1.0, 0.6)  # acceptance is always reported at the decoding temperatures
CALIBRATION_ROWS = 16  # chunks whose MLP activations rank the neurons a pruned draft keeps


def check_compute(draft_config, target_config, max_compute_ratio: float) -> float:
    """The draft's compute ratio; ValueError when it exceeds `max_compute_ratio`."""
    ratio = compute_ratio(draft_config, target_config)
    if ratio > max_compute_ratio:
        vocab = getattr(draft_config, CONFIG_KEY, None) or draft_config.vocab_size
        raise ValueError(
            f"draft layers={draft_config.num_hidden_layers}, hidden={draft_config.hidden_size}, "
            f"intermediate={draft_config.intermediate_size}, vocab={vocab} costs {ratio:.1%} of the "
            f"target's MACs (> max_compute_ratio={max_compute_ratio:.0%})"
        )
    return ratio


def build_draft(target, arch: DraftArch, chunks: torch.Tensor, generator: torch.Generator, max_ratio: float):
    """The initial draft for `arch` (compute checked first) and its compute ratio."""
    config = draft_config(target.config, arch)
    if arch.vocab is not None:
        setattr(config, CONFIG_KEY, arch.vocab)
    ratio = check_compute(config, target.config, max_ratio)
    if arch.vocab is not None:
        delattr(config, CONFIG_KEY)  # set again by `attach`, with the head
    if arch.init == "random":
        draft = init_random(target, config, generator)
    else:
        draft = init_from_target(target, config, arch, chunks[:CALIBRATION_ROWS])
    if arch.vocab is not None:
        attach(draft, draft_vocabulary(target.config, chunks, arch.vocab))
    return draft.to(target.device), ratio


def _trained_parameters(draft, arch: DraftArch) -> list[torch.nn.Parameter]:
    """Every parameter but a copied target embedding behind a reduced head (kept frozen: the head is
    separate, and the input side is the target's own)."""
    frozen = arch.init == "target" and arch.vocab is not None
    embedding = draft.get_input_embeddings().weight
    params = []
    for param in draft.parameters():
        train = not (frozen and param is embedding)
        param.requires_grad_(train)
        if train:
            params.append(param)
    return params


def _fit(draft, arch: DraftArch, targets: TeacherTargets, opts: TrainOptions, generator) -> list[float]:
    """Distil `targets` into `draft` for `opts.steps` steps (bfloat16 autocast when `opts.use_amp`)."""
    head = draft.lm_head if isinstance(draft.lm_head, ReducedVocabHead) else None
    positions = head.positions() if head is not None else None
    device = draft.device

    def loss_of(index: torch.Tensor) -> torch.Tensor:
        ids = targets.tokens[index].to(device)  # [B, S]
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=opts.use_amp):
            if head is None:
                logits = draft(input_ids=ids).logits  # [B, S, V]
            else:
                logits = head.reduced(draft.model(input_ids=ids).last_hidden_state)  # [B, S, V']
        return tempered_loss(logits.float(), targets, index, kind=opts.loss, positions=positions)

    draft.train()
    params = _trained_parameters(draft, arch)
    losses = train_steps(params, loss_of, targets.tokens.shape[0], opts, label="draft", generator=generator)
    draft.eval()
    return losses


def train_draft(
    target_dir: str | Path,
    out_dir: str | Path,
    *,
    texts: Sequence[str] | None = None,
    token_ids: Sequence[Sequence[int]] | None = None,
    heldout: Sequence[Sequence[int]] | None = None,
    arch: DraftArch | dict | None = None,
    max_compute_ratio: float = 0.15,
    teacher: Sequence[str | Path] | None = None,
    **options,
) -> dict:
    """Distil a draft from the target in `target_dir` and save it (with the tokenizer) to `out_dir`.

    Training data: `texts` (tokenized with the target's tokenizer) or `token_ids`, cut into `seq_len`
    chunks; `heldout` sequences (default: held-out documents, `distill.split_heldout`) measure
    acceptance. `arch`: a `DraftArch` (or its fields); `options`: the fields of `TrainOptions`.
    `teacher`: the parts of a shared teacher pass (`resispec.models.teacher`) holding this draft's
    chunks; None: the draft's own pass.
    Returns (and writes as training.json) the report: architecture, compute ratio, acceptance before and
    after, losses and the training cost (steps, teacher and trained tokens, seconds, machine load).
    """
    opts = TrainOptions(**options)
    arch = arch if isinstance(arch, DraftArch) else DraftArch(**(arch or {}))
    with pinned_threads(opts.threads):
        data = {"texts": texts, "token_ids": token_ids, "heldout": heldout}
        return _train_draft(target_dir, out_dir, data, arch, max_compute_ratio, opts, teacher)


def _train_draft(target_dir, out_dir, data: dict, arch, max_ratio, opts, teacher) -> dict:
    start, load_start = time.monotonic(), machine_load()
    target, (chunks, heldout, tokenizer) = load_teacher(target_dir, opts, **data, caller="train_draft")
    generator = torch.Generator().manual_seed(opts.seed)
    draft, ratio = build_draft(target, arch, chunks, generator, max_ratio)
    report = {
        "arch": asdict(arch),
        "shape": _shape(draft),
        "compute_ratio": ratio,
        "options": opts.report(),
    }
    report["compute_ratio_ctx256"] = compute_ratio(draft.config, target.config, context_len=256)
    held = HeldoutTarget(target, heldout)  # the frozen target's side, for before and after
    report["acceptance_before"] = acceptance_report(held, draft)
    teacher_start = time.monotonic()
    shared = load_parts(teacher) if teacher else None
    targets = model_targets(target, chunks, opts, features=False, shared=shared)
    report["teacher_pass"] = "shared" if shared else "own"  # teacher_seconds: reading, or labelling
    teacher_seconds, train_start = time.monotonic() - teacher_start, time.monotonic()
    report.update(loss_summary(_fit(draft, arch, targets, opts, generator)))
    report["acceptance"] = acceptance_report(held, draft)
    report["cost"] = training_cost(
        opts,
        int(targets.tokens.numel()),
        start=start,
        teacher_seconds=teacher_seconds,
        train_start=train_start,
        load_start=load_start,
    )
    save_draft(draft, tokenizer, out_dir, report)
    log.info("draft saved to %s: %s", out_dir, json.dumps(report))
    return report


def _shape(draft) -> dict:
    """The draft's actual size: layers, hidden and MLP widths, LM-head rows."""
    config = draft.config
    rows = getattr(config, CONFIG_KEY, None) or config.vocab_size
    return {
        "layers": config.num_hidden_layers,
        "hidden": config.hidden_size,
        "intermediate": config.intermediate_size,
        "vocab": rows,
    }


def acceptance_report(held: HeldoutTarget, draft) -> dict:
    """{"1.0": acceptance, "0.6": acceptance} of `draft` against the target's held-out outputs."""
    values = acceptances(held, draft, list(REPORT_TEMPERATURES))
    return {str(t): value for t, value in values.items()}


def save_draft(draft, tokenizer, out_dir: str | Path, report: dict) -> None:
    """The draft (reduced head included), its tokenizer and training.json in `out_dir`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    draft.save_pretrained(out)
    if tokenizer is not None:
        tokenizer.save_pretrained(out)
    (out / "training.json").write_text(json.dumps(report, indent=2) + "\n")
