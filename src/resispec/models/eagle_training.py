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

from resispec.models.acceptance import overlap, same_length_batches
from resispec.models.distill import (
    TeacherTargets,
    TrainOptions,
    distill_loss,
    lr_factor,
    teacher_topk,
    training_chunks,
)
from resispec.models.eagle_head import EagleHead, new_eagle_head, save_eagle_head

log = logging.getLogger(__name__)


@torch.no_grad()
def measure_acceptances(target, head: EagleHead, contexts, temperatures, *, batch_size: int = 8) -> dict:
    """{T: mean sum_v min(p_T, q_T)} of the head's first draft over every position t >= 1 of `contexts`."""
    rows = [torch.as_tensor(c, dtype=torch.long) for c in contexts]
    if not rows or min(len(r) for r in rows) < 2:
        raise ValueError("contexts must be non-empty sequences of at least 2 tokens")
    totals, count = dict.fromkeys(temperatures, 0.0), 0
    for start in range(0, len(rows), batch_size):
        for ids in same_length_batches(rows[start : start + batch_size]):
            ids = ids.to(target.device)
            out = target(input_ids=ids, output_hidden_states=True)
            features = out.hidden_states[-1]  # [B, S, H]
            _, head_logits = head(ids[:, 1:], features[:, :-1])  # [B, S-1, V], predicts x_{t+2}
            target_logits = out.logits[:, 1:].float().cpu()  # [B, S-1, V]
            for temperature in temperatures:
                shared = overlap(target_logits, head_logits.float().cpu(), temperature)
                totals[temperature] += float(shared.sum())
            count += ids.shape[0] * (ids.shape[1] - 1)
    return {t: total / count for t, total in totals.items()}


def eagle_loss(head: EagleHead, targets: TeacherTargets, index: torch.Tensor) -> torch.Tensor:
    """Smooth L1 on the next feature + 0.1 x cross-entropy to the target's next-token distribution."""
    tokens, features = targets.tokens[index], targets.features[index].float()  # [B, S], [B, S, H]
    device = head.fc.weight.device
    predicted, logits = head(tokens[:, 1:].to(device), features[:, :-1].to(device))  # [B, S-1, H], [.., V]
    regression = F.smooth_l1_loss(predicted, features[:, 1:].to(device))
    probs, indices = targets.probs[index][:, 1:].to(device), targets.indices[index][:, 1:].to(device)
    return regression + 0.1 * distill_loss(logits, probs, indices)


def _train_loop(head, targets, opts: TrainOptions, *, seconds, generator) -> list[float]:
    params = [p for p in head.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=opts.lr, betas=(0.9, 0.95), weight_decay=0.0)
    head.train()
    losses, start, n = [], time.monotonic(), targets.tokens.shape[0]
    order, cursor = torch.randperm(n, generator=generator), 0
    for step in range(1, opts.steps + 1):
        if cursor + opts.batch_size > n:
            order, cursor = torch.randperm(n, generator=generator), 0
        index, cursor = order[cursor : cursor + opts.batch_size], cursor + opts.batch_size
        for group in optimizer.param_groups:
            group["lr"] = opts.lr * lr_factor(
                step, max(step / opts.steps, (time.monotonic() - start) / seconds)
            )
        with torch.autocast(
            device_type=head.fc.weight.device.type, dtype=torch.bfloat16, enabled=opts.use_amp
        ):
            loss = eagle_loss(head, targets, index)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 0.5)
        optimizer.step()
        losses.append(loss.item())
        elapsed = time.monotonic() - start
        if step == 1 or step % 50 == 0:
            eta = max(min((opts.steps - step) * elapsed / step, seconds - elapsed), 0)
            log.info("eagle step %d loss %.4f, ETA %.0f s", step, losses[-1], eta)
        if elapsed >= seconds:
            break
    head.eval()
    return losses


def train(
    target_dir: str | Path,
    out_dir: str | Path,
    *,
    texts: Sequence[str] | None = None,
    token_ids: Sequence[Sequence[int]] | None = None,
    heldout: Sequence[Sequence[int]] | None = None,
    **options,
) -> dict:
    """Train an EAGLE-1 head on the target's features over `texts` or `token_ids` (cut into `seq_len`
    chunks; `heldout` defaults to the last 5%, at most 32 chunks), save it in the EAGLE-1 layout to
    `out_dir` with a training.json report (losses, acceptance at T = 1 and 0.6) and return the report.
    `options` are the fields of `TrainOptions` (defaults here: lr 1e-3, teacher_fraction 0.3)."""
    from resispec.models.loading import load_model

    opts = TrainOptions(**{"lr": 1e-3, "teacher_fraction": 0.3, **options})
    start = time.monotonic()
    target = load_model(target_dir, device=opts.device, dtype="float32")
    chunks, heldout, _ = training_chunks(
        target, target_dir, texts=texts, token_ids=token_ids, heldout=heldout, seq_len=opts.seq_len,
        caller="train_eagle_head",
    )  # fmt: skip
    generator = torch.Generator().manual_seed(opts.seed)
    head = new_eagle_head(target, generator).to(opts.device)
    report = {"acceptance_before": _acceptance(target, head, heldout)}
    targets = teacher_topk(
        target, chunks, top_k=opts.top_k, seconds=opts.teacher_fraction * opts.seconds, amp=opts.use_amp,
        with_features=True,
    )  # fmt: skip
    remaining = max(opts.seconds - (time.monotonic() - start) - 0.05 * opts.seconds, 1.0)
    losses = _train_loop(head, targets, opts, seconds=remaining, generator=generator)
    window = max(1, min(20, len(losses) // 5))
    report.update(
        steps=len(losses),
        teacher_tokens=int(targets.tokens.numel()),
        loss_first=sum(losses[:window]) / window,
        loss_last=sum(losses[-window:]) / window,
    )
    report["acceptance"] = _acceptance(target, head, heldout)
    report["train_seconds"] = time.monotonic() - start
    save_eagle_head(head, out_dir)
    (Path(out_dir) / "training.json").write_text(json.dumps(report, indent=2) + "\n")
    log.info("EAGLE head saved to %s: %s", out_dir, json.dumps(report))
    return report


def _acceptance(target, head, heldout) -> dict:
    return {str(t): value for t, value in measure_acceptances(target, head, heldout, [1.0, 0.6]).items()}
