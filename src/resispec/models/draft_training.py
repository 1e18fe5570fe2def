"""Draft models distilled from a target: draft config, initialisation, training loop, saving.

A draft may use at most `max_compute_ratio` (15%) of the target's MACs per token (`resispec.models.compute`);
its acceptance is measured by `resispec.models.acceptance`.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from resispec.models.acceptance import measure_acceptances
from resispec.models.compute import compute_ratio
from resispec.models.distill import (
    TeacherTargets,
    TrainOptions,
    distill_loss,
    lr_factor,
    teacher_topk,
    training_chunks,
)

log = logging.getLogger(__name__)


def make_draft_config(target_config, *, layers: int, hidden: int, intermediate: int | None = None):
    """A Llama config for a draft sharing the target's vocabulary and special tokens."""
    from transformers import LlamaConfig

    head_dim = next((d for d in (64, 32, 16, 8) if hidden % d == 0), None)
    if head_dim is None:
        raise ValueError(f"hidden ({hidden}) must be a multiple of 8")
    intermediate = intermediate or int(math.ceil(hidden * 8 / 3 / 64) * 64)
    return LlamaConfig(
        vocab_size=target_config.vocab_size,
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=hidden // head_dim,
        num_key_value_heads=hidden // head_dim,
        head_dim=head_dim,
        max_position_embeddings=min(getattr(target_config, "max_position_embeddings", 2048), 4096),
        rms_norm_eps=getattr(target_config, "rms_norm_eps", 1e-5),
        rope_parameters=getattr(target_config, "rope_parameters", None),
        tie_word_embeddings=True,
        bos_token_id=target_config.bos_token_id,
        eos_token_id=target_config.eos_token_id,
        pad_token_id=getattr(target_config, "pad_token_id", None),
    )


def check_compute(draft_config, target_config, max_compute_ratio: float) -> float:
    """The draft's compute ratio; ValueError when it exceeds `max_compute_ratio`."""
    ratio = compute_ratio(draft_config, target_config)
    if ratio > max_compute_ratio:
        raise ValueError(
            f"draft layers={draft_config.num_hidden_layers}, hidden={draft_config.hidden_size} costs "
            f"{ratio:.1%} of the target's MACs (> max_compute_ratio={max_compute_ratio:.0%})"
        )
    return ratio


def init_draft(target, config, generator: torch.Generator):
    """A draft model: N(0, 0.02) weights from `generator`, unit norms, and the target's embedding
    projected onto its top `hidden` principal directions (tied input/output embedding)."""
    from transformers import LlamaForCausalLM

    draft = LlamaForCausalLM(config)
    with torch.no_grad():
        for name, param in draft.named_parameters():
            if param.ndim == 1:
                param.fill_(1.0)
            else:
                std = (
                    0.02 / math.sqrt(2 * config.num_hidden_layers)
                    if "o_proj" in name or "down" in name
                    else 0.02
                )
                param.copy_(torch.randn(param.shape, generator=generator) * std)
        embed = target.get_input_embeddings().weight.detach().float()  # [V, H_target]
        _, _, right = torch.linalg.svd(embed - embed.mean(0), full_matrices=False)  # right: [H_t, H_t]
        projected = embed @ right[: config.hidden_size].T  # [V, hidden]
        draft.get_input_embeddings().weight.copy_(projected)
        # final-norm gain so that initial logits have unit scale: std(logit) ~ gain * |embedding row|
        draft.model.norm.weight.fill_(float(1.0 / projected.norm(dim=-1).mean()))
    draft.tie_weights()
    return draft


def _train_loop(draft, targets: TeacherTargets, opts: TrainOptions, *, seconds, generator) -> list:
    """AdamW on the distillation loss until `steps` or `seconds`; returns [(step, loss)] per log point."""
    optimizer = torch.optim.AdamW(draft.parameters(), lr=opts.lr, betas=(0.9, 0.98), weight_decay=0.0)
    draft.train()
    history, start, n = [], time.monotonic(), targets.tokens.shape[0]
    order, cursor = torch.randperm(n, generator=generator), 0
    for step in range(1, opts.steps + 1):
        if cursor + opts.batch_size > n:
            order, cursor = torch.randperm(n, generator=generator), 0
        index = order[cursor : cursor + opts.batch_size]
        cursor += opts.batch_size
        frac = max(step / opts.steps, (time.monotonic() - start) / seconds)
        for group in optimizer.param_groups:
            group["lr"] = opts.lr * lr_factor(step, frac)
        with torch.autocast(device_type=draft.device.type, dtype=torch.bfloat16, enabled=opts.use_amp):
            logits = draft(input_ids=targets.tokens[index].to(draft.device)).logits  # [B, S, V]
        loss = distill_loss(logits.float(), targets.probs[index], targets.indices[index])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(draft.parameters(), 1.0)
        optimizer.step()
        history.append((step, loss.item()))
        elapsed = time.monotonic() - start
        if step == 1 or step % 50 == 0:
            eta = min((opts.steps - step) * elapsed / step, seconds - elapsed)
            log.info(
                "draft step %d loss %.4f, %.0f tok/s, ETA %.0f s",
                step,
                loss.item(),
                step * targets.tokens[index].numel() / elapsed,
                max(eta, 0),
            )
        if elapsed >= seconds:
            break
    draft.eval()
    return history


def train_draft(
    target_dir: str | Path,
    out_dir: str | Path,
    *,
    texts: Sequence[str] | None = None,
    token_ids: Sequence[Sequence[int]] | None = None,
    heldout: Sequence[Sequence[int]] | None = None,
    layers: int = 4,
    hidden: int = 256,
    max_compute_ratio: float = 0.15,
    **options,
) -> dict:
    """Distil a draft from the target in `target_dir` and save it (with the tokenizer) to `out_dir`.

    Training data: `texts` (tokenized with the target's tokenizer) or `token_ids`, cut into `seq_len`
    chunks; `heldout` sequences (default: the last 5% of chunks, at most 32) measure acceptance. At most
    `teacher_fraction` of `minutes_budget` computes the target's top-k distributions; the rest trains.
    `options` are the fields of `TrainOptions`. Returns (and writes as training.json) a report with
    the compute ratio, losses and acceptance.
    """
    from resispec.models.loading import load_model

    opts = TrainOptions(**options)
    start = time.monotonic()
    target = load_model(target_dir, device=opts.device, dtype="float32")
    config = make_draft_config(target.config, layers=layers, hidden=hidden)
    ratio = check_compute(config, target.config, max_compute_ratio)
    chunks, heldout, tokenizer = training_chunks(
        target, target_dir, texts=texts, token_ids=token_ids, heldout=heldout, seq_len=opts.seq_len,
        caller="train_draft",
    )  # fmt: skip
    generator = torch.Generator().manual_seed(opts.seed)
    draft = init_draft(target, config, generator).to(opts.device)
    report = {"layers": layers, "hidden": hidden, "compute_ratio": ratio, "train_tokens": int(chunks.numel())}
    report["compute_ratio_ctx256"] = compute_ratio(config, target.config, context_len=256)
    report["acceptance_before"] = _acceptance_report(target, draft, heldout)
    targets = teacher_topk(
        target, chunks, top_k=opts.top_k, seconds=opts.teacher_fraction * opts.seconds, amp=opts.use_amp
    )
    report["teacher_tokens"] = int(targets.tokens.numel())
    remaining = max(opts.seconds - (time.monotonic() - start) - 0.05 * opts.seconds, 1.0)
    history = _train_loop(draft, targets, opts, seconds=remaining, generator=generator)
    report.update(_summarise_history(history))
    report["acceptance"] = _acceptance_report(target, draft, heldout)
    report["train_seconds"] = time.monotonic() - start
    _save_draft(draft, tokenizer, out_dir, report)
    log.info("draft saved to %s: %s", out_dir, json.dumps(report))
    return report


def _acceptance_report(target, draft, heldout) -> dict:
    return {str(t): value for t, value in measure_acceptances(target, draft, heldout, [1.0, 0.6]).items()}


def _summarise_history(history: list) -> dict:
    losses = [loss for _, loss in history]
    window = max(1, min(20, len(losses) // 5))
    return {
        "steps": len(losses),
        "loss_first": sum(losses[:window]) / window,
        "loss_last": sum(losses[-window:]) / window,
    }


def _save_draft(draft, tokenizer, out_dir: str | Path, report: dict) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    draft.save_pretrained(out)
    if tokenizer is not None:
        tokenizer.save_pretrained(out)
    (out / "training.json").write_text(json.dumps(report, indent=2) + "\n")
