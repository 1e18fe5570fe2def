"""Draft models distilled from a target: compute budget, teacher top-k targets, training, acceptance.

Compute is counted as multiply-accumulates (MACs) per generated token: every weight matrix of the
decoder layers (attention projections and MLP) plus the LM head; the embedding lookup is free. Attention
scores and values add `2 * context_len * heads * head_dim` per layer (0 by default; pass a context length
to include them). A draft may use at most `max_compute_ratio` (15%) of the target's MACs.

Acceptance of a single candidate at temperature T is sum_v min(p_T(v), q_T(v)), with p the target's and q
the draft's next-token distribution, averaged over every position of held-out sequences (each position's
prefix is one context). T = 0 compares greedy tokens.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from resispec.distill import (
    TeacherTargets,
    distill_loss,
    lr_factor,
    teacher_topk,
    training_chunks,
)

log = logging.getLogger(__name__)


def per_token_macs(config, context_len: int = 0) -> int:
    """MACs per token of a Llama-style decoder config: layer weight matrices + LM head (+ attention)."""
    hidden, layers = config.hidden_size, config.num_hidden_layers
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    attn = hidden * head_dim * (2 * heads + 2 * kv_heads)  # q, o and k, v projections
    mlp = 3 * hidden * config.intermediate_size  # gate, up, down
    scores = 2 * context_len * heads * head_dim
    return layers * (attn + mlp + scores) + hidden * config.vocab_size


def compute_ratio(draft_config, target_config, context_len: int = 0) -> float:
    """The draft's per-token MACs as a fraction of the target's."""
    return per_token_macs(draft_config, context_len) / per_token_macs(target_config, context_len)


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


@torch.no_grad()
def measure_acceptance(target, draft, contexts, temperature: float, *, batch_size: int = 8) -> float:
    """Mean over every position of `contexts` (token-id sequences, or a LongTensor [N, S]) of
    sum_v min(p_T, q_T); T = 0 gives the rate of equal greedy tokens."""
    return measure_acceptances(target, draft, contexts, [temperature], batch_size=batch_size)[temperature]


@torch.no_grad()
def measure_acceptances(target, draft, contexts, temperatures, *, batch_size: int = 8) -> dict:
    """`measure_acceptance` for several temperatures with one forward pass per model: {T: acceptance}."""
    if any(t < 0 for t in temperatures):
        raise ValueError(f"temperatures must be >= 0, got {list(temperatures)}")
    rows = [torch.as_tensor(c, dtype=torch.long) for c in contexts]
    if not rows:
        raise ValueError("contexts is empty")
    totals, count = dict.fromkeys(temperatures, 0.0), 0
    for start in range(0, len(rows), batch_size):
        for ids in _same_length_batches(rows[start : start + batch_size]):
            target_logits = target(input_ids=ids.to(target.device)).logits.float().cpu()  # [B, S, V]
            draft_logits = draft(input_ids=ids.to(draft.device)).logits.float().cpu()  # [B, S, V]
            for temperature in temperatures:
                totals[temperature] += float(_overlap(target_logits, draft_logits, temperature).sum())
            count += ids.numel()
    return {t: total / count for t, total in totals.items()}


def _overlap(target_logits: torch.Tensor, draft_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """sum_v min(p_T, q_T) per position [B, S]; at T = 0 whether the argmaxes agree."""
    if temperature == 0:
        return (target_logits.argmax(-1) == draft_logits.argmax(-1)).double()
    target_probs = torch.softmax(target_logits / temperature, dim=-1)  # [B, S, V]
    draft_probs = torch.softmax(draft_logits / temperature, dim=-1)
    return torch.minimum(target_probs, draft_probs).sum(-1).double()


def _same_length_batches(rows: Sequence[torch.Tensor]):
    by_length: dict[int, list[torch.Tensor]] = {}
    for row in rows:
        by_length.setdefault(len(row), []).append(row)
    for group in by_length.values():
        yield torch.stack(group)  # [b, S]


def _train_loop(draft, targets: TeacherTargets, *, steps, seconds, batch_size, lr, generator, amp) -> list:
    """AdamW on the distillation loss until `steps` or `seconds`; returns [(step, loss)] per log point."""
    optimizer = torch.optim.AdamW(draft.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.0)
    draft.train()
    history, start, n = [], time.monotonic(), targets.tokens.shape[0]
    order, cursor = torch.randperm(n, generator=generator), 0
    for step in range(1, steps + 1):
        if cursor + batch_size > n:
            order, cursor = torch.randperm(n, generator=generator), 0
        index = order[cursor : cursor + batch_size]
        cursor += batch_size
        frac = max(step / steps, (time.monotonic() - start) / seconds)
        for group in optimizer.param_groups:
            group["lr"] = lr * lr_factor(step, frac)
        with torch.autocast(device_type=draft.device.type, dtype=torch.bfloat16, enabled=amp):
            logits = draft(input_ids=targets.tokens[index].to(draft.device)).logits  # [B, S, V]
        loss = distill_loss(logits.float(), targets.probs[index], targets.indices[index])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(draft.parameters(), 1.0)
        optimizer.step()
        history.append((step, loss.item()))
        elapsed = time.monotonic() - start
        if step == 1 or step % 50 == 0:
            eta = min((steps - step) * elapsed / step, seconds - elapsed)
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
    steps: int = 100_000,
    minutes_budget: float = 15.0,
    seed: int = 0,
    device: str = "cpu",
    seq_len: int = 128,
    batch_size: int = 8,
    lr: float = 3e-3,
    top_k: int = 64,
    teacher_fraction: float = 0.25,
    max_compute_ratio: float = 0.15,
    amp: bool | None = None,
) -> dict:
    """Distil a draft from the target in `target_dir` and save it (with the tokenizer) to `out_dir`.

    Training data: `texts` (tokenized with the target's tokenizer) or `token_ids`, cut into `seq_len`
    chunks; `heldout` sequences (default: the last 5% of chunks, at most 32) measure acceptance. At most
    `teacher_fraction` of `minutes_budget` computes the target's top-k distributions; the rest trains.
    Returns (and writes as training.json) a report with the compute ratio, losses and acceptance.
    """
    from resispec.models import load_model

    start, seconds = time.monotonic(), 60.0 * minutes_budget
    amp = (device == "cpu" or device.startswith("cuda")) if amp is None else amp
    target = load_model(target_dir, device=device, dtype="float32")
    config = make_draft_config(target.config, layers=layers, hidden=hidden)
    ratio = compute_ratio(config, target.config)
    if ratio > max_compute_ratio:
        raise ValueError(
            f"draft layers={layers}, hidden={hidden} costs {ratio:.1%} of the target's MACs "
            f"(> max_compute_ratio={max_compute_ratio:.0%})"
        )
    chunks, heldout, tokenizer = training_chunks(
        target, target_dir, texts=texts, token_ids=token_ids, heldout=heldout, seq_len=seq_len,
        caller="train_draft",
    )  # fmt: skip
    generator = torch.Generator().manual_seed(seed)
    draft = init_draft(target, config, generator).to(device)
    report = {"layers": layers, "hidden": hidden, "compute_ratio": ratio, "train_tokens": int(chunks.numel())}
    report["compute_ratio_ctx256"] = compute_ratio(config, target.config, context_len=256)
    report["acceptance_before"] = _acceptance_report(target, draft, heldout)
    targets = teacher_topk(target, chunks, top_k=top_k, seconds=teacher_fraction * seconds, amp=amp)
    report["teacher_tokens"] = int(targets.tokens.numel())
    remaining = max(seconds - (time.monotonic() - start) - 0.05 * seconds, 1.0)
    history = _train_loop(
        draft,
        targets,
        steps=steps,
        seconds=remaining,
        batch_size=batch_size,
        lr=lr,
        generator=generator,
        amp=amp,
    )
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
