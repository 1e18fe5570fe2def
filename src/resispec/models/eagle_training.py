"""Training and acceptance of EAGLE-1 heads (`resispec.eagle_head`).

Loss (EAGLE-1): smooth L1 between the predicted and the target's next feature, plus 0.1 x the
cross-entropy to the target's next-token distribution (here its top-k part plus one tail bucket, which
differs from the full cross-entropy by a constant in the head's parameters only through the tail).
Acceptance: at each position t >= 1 of held-out sequences, the head sees the target's features f_<t and
tokens x_<=t and proposes x_{t+1}; we average sum_v min(p_T, q_T) against the target's distribution.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path

import torch
from torch.nn import functional as F

from resispec.models.acceptance import HeldoutTarget, overlap
from resispec.models.distill import TeacherTargets, load_teacher, tempered_loss
from resispec.models.eagle_head import EagleHead, new_eagle_head, save_eagle_head
from resispec.models.reduced_vocab import ReducedVocabHead, draft_vocabulary
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


@torch.no_grad()
def measure_acceptances(target, head: EagleHead, contexts, temperatures, *, batch_size: int = 8) -> dict:
    """{T: mean sum_v min(p_T, q_T)} of the head's first draft over every position t >= 1 of `contexts`."""
    if len(contexts) == 0 or min(len(c) for c in contexts) < 2:
        raise ValueError("contexts must be non-empty sequences of at least 2 tokens")
    held = HeldoutTarget(target, contexts, batch_size=batch_size, features=True)
    return head_acceptances(held, head, temperatures)


@torch.no_grad()
def head_acceptances(held: HeldoutTarget, head: EagleHead, temperatures) -> dict:
    """`measure_acceptances` against the target's kept outputs `held` (with features): only the head runs."""
    totals, count = dict.fromkeys(temperatures, 0.0), 0
    for batch in held.batches:
        ids = batch.ids.to(batch.features.device)
        _, head_logits = head(ids[:, 1:], batch.features[:, :-1])  # [B, S-1, V], predicts x_{t+2}
        target_logits = batch.logits[:, 1:]  # [B, S-1, V]
        for temperature in temperatures:
            shared = overlap(target_logits, head_logits.float().cpu(), temperature)
            totals[temperature] += float(shared.sum())
        count += ids.shape[0] * (ids.shape[1] - 1)
    return {t: total / count for t, total in totals.items()}


FEATURE_WEIGHT = 1.0  # EAGLE-1's weights: smooth L1 on the next feature ...
DISTILL_WEIGHT = 0.1  # ... plus 0.1 x the distillation loss on the next token


def eagle_loss(head: EagleHead, targets: TeacherTargets, index: torch.Tensor, opts: TrainOptions):
    """Smooth L1 on the next feature + 0.1 x the distillation loss to the target's next-token law."""
    tokens, features = targets.tokens[index], targets.features[index].float()  # [B, S], [B, S, H]
    device = head.fc.weight.device
    reduced = isinstance(head.lm_head, ReducedVocabHead)
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=opts.use_amp):
        predicted = head.features(tokens[:, 1:].to(device), features[:, :-1].to(device))  # [B, S-1, H]
        logits = head.lm_head.reduced(predicted) if reduced else head.lm_head(predicted)  # [B, S-1, V']
    regression = F.smooth_l1_loss(predicted.float(), features[:, 1:].to(device))
    shifted = TeacherTargets(
        tokens=targets.tokens,
        indices=targets.indices[:, 1:],
        probs={t: p[:, 1:] for t, p in targets.probs.items()},
    )
    positions = head.lm_head.positions() if reduced else None
    distill = tempered_loss(logits.float(), shifted, index, kind=opts.loss, positions=positions)
    return FEATURE_WEIGHT * regression + DISTILL_WEIGHT * distill


def train(
    target_dir: str | Path,
    out_dir: str | Path,
    *,
    texts: Sequence[str] | None = None,
    token_ids: Sequence[Sequence[int]] | None = None,
    heldout: Sequence[Sequence[int]] | None = None,
    vocab: int | None = None,
    teacher: Sequence[str | Path] | None = None,
    **options,
) -> dict:
    """Train an EAGLE-1 head on the target's features over `texts` or `token_ids` (cut into `seq_len`
    chunks; `heldout` defaults to held-out documents), save it in the EAGLE-1 layout to `out_dir` with a
    training.json report (losses, acceptance at T = 1 and 0.6, compute ratio, training cost) and return
    the report. `vocab`: draft over the `vocab` most frequent training tokens (q = 0 elsewhere; None:
    the target's vocabulary). `options` are the fields of `TrainOptions`. `teacher`: the parts of a
    shared teacher pass (`resispec.models.teacher`) holding this head's chunks and features; None: the
    head's own pass."""
    opts = TrainOptions(**options)
    with pinned_threads(opts.threads):
        data = {"texts": texts, "token_ids": token_ids, "heldout": heldout}
        return _train(target_dir, out_dir, data, vocab, opts, teacher)


def _train(target_dir, out_dir, data: dict, vocab, opts: TrainOptions, teacher) -> dict:
    start, load_start = time.monotonic(), machine_load()
    target, (chunks, heldout, _) = load_teacher(target_dir, opts, **data, caller="train_eagle_head")
    generator = torch.Generator().manual_seed(opts.seed)
    head = new_eagle_head(target, generator, vocab and draft_vocabulary(target.config, chunks, vocab)).to(
        opts.device
    )
    report = {
        "vocab": vocab,
        "compute_ratio": head_compute_ratio(head, target.config),
        "options": opts.report(),
    }
    held = HeldoutTarget(target, heldout, features=True)  # the frozen target's side, for before and after
    report["acceptance_before"] = _acceptance(held, head)
    teacher_start = time.monotonic()
    shared = load_parts(teacher) if teacher else None
    targets = model_targets(target, chunks, opts, features=True, shared=shared)
    report["teacher_pass"] = "shared" if shared else "own"  # teacher_seconds: reading, or labelling
    teacher_seconds, train_start = time.monotonic() - teacher_start, time.monotonic()
    head.train()
    params = [p for p in head.parameters() if p.requires_grad]
    losses = train_steps(
        params,
        lambda index: eagle_loss(head, targets, index, opts),
        targets.tokens.shape[0],
        opts,
        label="eagle",
        generator=generator,
    )
    head.eval()
    report.update(loss_summary(losses))
    report["acceptance"] = _acceptance(held, head)
    report["cost"] = training_cost(
        opts,
        int(targets.tokens.numel()),
        start=start,
        teacher_seconds=teacher_seconds,
        train_start=train_start,
        load_start=load_start,
    )
    save_eagle_head(head, out_dir)
    (Path(out_dir) / "training.json").write_text(json.dumps(report, indent=2) + "\n")
    log.info("EAGLE head saved to %s: %s", out_dir, json.dumps(report))
    return report


def head_compute_ratio(head: EagleHead, target_config) -> float:
    """The head's per-token MACs (fc, its layer, the LM head it uses) as a fraction of the target's."""
    from resispec.models.compute import per_token_macs

    linears = [m for m in head.modules() if isinstance(m, torch.nn.Linear)]
    macs = sum(m.weight.numel() for m in linears if m is not head.lm_head)
    macs += head.lm_head.weight.numel()
    return macs / per_token_macs(target_config)


def _acceptance(held: HeldoutTarget, head) -> dict:
    return {str(t): value for t, value in head_acceptances(held, head, [1.0, 0.6]).items()}
