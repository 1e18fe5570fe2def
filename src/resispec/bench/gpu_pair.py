"""The paper's model pair for ``bench gpu``: Llama-2-7B and JackFram/llama-68m built from their published
configs (``resispec/models/published_models.yaml``) with random weights that still agree like a pair.

Independent random weights would give two unrelated, nearly flat next-token laws, and so accept paths
that say nothing about a real pair. Instead both models share one random *bigram* structure and differ by
their own random, context-dependent layers, at full size (every matrix is dense, so every forward costs
what the published architecture costs):

- a shared rank-``r`` space: token table ``U`` [V, r] and head table ``W`` [V, r]; each model embeds it
  with its own orthonormal rows ``A`` [r, H]: ``embed = U A * sqrt(H)`` (unit RMS per element) and
  ``lm_head = W A * sharpness * sqrt(r / H)``, so both models' logits are ``W u`` for the same unit ``u``
  of a token and are Gaussian with standard deviation ``sharpness`` (an entropy like a trained LM's);
- every layer writes only inside the span of ``A`` (its output projections are projected onto it) and
  is scaled, measured on a prefix, so that its update has RMS ``divergence / sqrt(2 * layers)``: the final
  state is the token's point plus a context-dependent shift of RMS ``divergence``, independent for the two
  models. ``divergence`` thus sets how often the draft agrees with the target, at any width and depth.

The bench measures and reports what this gives (single-candidate acceptance on the prefix, accepted
lengths per method); ``SHARPNESS`` and ``DIVERGENCE`` were chosen on the CPU at 32,000 tokens so that it
resembles Llama-2-7B with llama-68m (docs/reproduction-notes.md, "The GPU check").
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import torch

TARGET_REPO, DRAFT_REPO = "meta-llama/Llama-2-7b-hf", "JackFram/llama-68m"
# Chosen on the CPU at 32,000 tokens (the same at widths 64/32 and 512/256, 2/1 and 8/2 layers): the target's
# entropy is ~2.7-2.9 nats at T = 1 and one drafted candidate is accepted with probability ~0.67-0.70, as
# for a small draft of a 7B model on text (single-candidate acceptance 0.6-0.8 is the usual range)
SHARPNESS = 5.0  # standard deviation of the shared logits
DIVERGENCE = 0.15  # RMS of each model's context-dependent shift, relative to the token's own point
RANK = 256  # dimension of the shared bigram space (at most the draft's width)
CALIBRATION_PASSES = 2  # layer scales measured on the prefix; a second pass corrects the small drift
#: ``--scale tiny``: a CPU-sized pair of the same architecture (CI and tests): sizes only shrink
TINY = {
    "vocab_size": 512,
    "target": {"hidden_size": 64, "intermediate_size": 176, "num_hidden_layers": 2, "num_attention_heads": 4},
    "draft": {"hidden_size": 32, "intermediate_size": 88, "num_hidden_layers": 1, "num_attention_heads": 2},
}
SCALES = ("paper", "tiny")


def pair_configs(scale: str) -> tuple[dict, dict]:
    """config.json dicts of the target and the draft: the published ones, or shrunk by ``TINY``."""
    from resispec.models.published import published

    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    configs = [dict(published(repo).config) for repo in (TARGET_REPO, DRAFT_REPO)]
    if scale == "tiny":
        for config, role in zip(configs, ("target", "draft"), strict=True):
            config.update(TINY[role], num_key_value_heads=TINY[role]["num_attention_heads"])
            config["vocab_size"] = TINY["vocab_size"]
    return configs[0], configs[1]


@contextmanager
def _default_dtype(dtype: torch.dtype):
    """Build modules directly in ``dtype`` (as transformers' from_pretrained does): a 7B model is never
    held in float32, so it fits a 40 GB GPU."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)


def build_model(config: dict, device: torch.device, dtype: torch.dtype, seed: int) -> torch.nn.Module:
    """``LlamaForCausalLM`` of ``config`` on ``device`` in ``dtype`` with transformers' random init; that
    init draws from the global generator, so a scoped copy of it is seeded (nothing global changes)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    devices = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices), _default_dtype(dtype), torch.device(device):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(LlamaConfig.from_dict(config))
    return model.eval().requires_grad_(False)


def _orthonormal_rows(rank: int, width: int, generator: torch.Generator) -> torch.Tensor:
    """[rank, width] with orthonormal rows (float32, CPU)."""
    q, _ = torch.linalg.qr(torch.randn(width, rank, generator=generator))  # [width, rank]
    return q.T.contiguous()


@torch.no_grad()
def shape_weights(
    model, tables: tuple[torch.Tensor, torch.Tensor], sharpness: float, generator: torch.Generator
) -> torch.Tensor:
    """Give ``model`` the shared bigram structure ``tables`` = (U, W) [V, r] each (float32, CPU); returns
    its basis A [r, H] (on the model's device, float32) after confining the layer updates to it."""
    token_table, head_table = tables
    rank, hidden = token_table.shape[1], model.config.hidden_size
    device = model.model.embed_tokens.weight.device
    basis = _orthonormal_rows(rank, hidden, generator).to(device)  # [r, H]
    embed = token_table.to(device) @ basis * math.sqrt(hidden)  # [V, H]
    head = head_table.to(device) @ basis * (sharpness * math.sqrt(rank / hidden))  # [V, H]
    model.model.embed_tokens.weight.copy_(embed)
    model.lm_head.weight.copy_(head)
    for layer in model.model.layers:
        for linear in (layer.self_attn.o_proj, layer.mlp.down_proj):
            weight = linear.weight.float()  # [H, in]
            linear.weight.copy_(basis.T @ (basis @ weight))  # outputs inside span(A)
    return basis


@torch.no_grad()
def calibrate(model, prefix: torch.Tensor, divergence: float) -> list[float]:
    """Scale each layer's output projections so that its update has RMS ``divergence / sqrt(2 * layers)``
    on ``prefix`` [P] (long, on the model's device); returns the measured RMS of the last pass."""
    layers = model.model.layers
    goal = divergence / math.sqrt(2 * len(layers))
    linears = [lin for layer in layers for lin in (layer.self_attn.o_proj, layer.mlp.down_proj)]
    measured: dict[int, float] = {}

    def hook(module, _inputs, output):
        measured[id(module)] = float(output.float().pow(2).mean().sqrt())

    handles = [linear.register_forward_hook(hook) for linear in linears]
    try:
        for _ in range(CALIBRATION_PASSES):
            model(input_ids=prefix[None])
            for linear in linears:
                linear.weight.mul_(goal / max(measured[id(linear)], 1e-12))
        model(input_ids=prefix[None])
    finally:
        for handle in handles:
            handle.remove()
    return [measured[id(linear)] for linear in linears]


def build_pair(
    scale: str,
    device: torch.device,
    dtype: torch.dtype,
    prefix: torch.Tensor,
    *,
    seed: int = 0,
    sharpness: float = SHARPNESS,
    divergence: float = DIVERGENCE,
):
    """(target, draft, facts): both models built, shaped and calibrated on ``prefix`` [P]; ``facts``
    records sizes, parameter counts and the calibration."""
    target_config, draft_config = pair_configs(scale)
    generator = torch.Generator().manual_seed(seed)
    vocab = target_config["vocab_size"]
    rank = min(RANK, target_config["hidden_size"], draft_config["hidden_size"])
    tables = tuple(torch.randn(vocab, rank, generator=generator) / math.sqrt(rank) for _ in range(2))
    facts = {"scale": scale, "sharpness": sharpness, "divergence": divergence, "rank": rank}
    models = []
    for role, config, offset in (("target", target_config, 1), ("draft", draft_config, 2)):
        model = build_model(config, device, dtype, seed + offset)
        shape_weights(model, tables, sharpness, generator)
        rms = calibrate(model, prefix, divergence)
        facts[role] = {
            "repo": TARGET_REPO if role == "target" else DRAFT_REPO,
            "parameters": sum(p.numel() for p in model.parameters()),
            **{
                key: config[key]
                for key in (
                    "hidden_size",
                    "intermediate_size",
                    "num_hidden_layers",
                    "num_attention_heads",
                    "vocab_size",
                )
            },
            "layer_update_rms": [min(rms), max(rms)],
            "attention": getattr(model.config, "_attn_implementation", None),
        }
        models.append(model)
    return models[0], models[1], facts


@torch.no_grad()
def single_candidate_acceptance(target, draft, prefix: torch.Tensor, temperature: float = 1.0) -> dict:
    """Mean over the prefix's positions of sum_x min(p, q) (the acceptance of one drafted candidate) and
    the target's mean entropy in nats, at ``temperature``."""
    p = torch.softmax(target(input_ids=prefix[None]).logits[0].float() / temperature, -1)  # [P, V]
    q = torch.softmax(draft(input_ids=prefix[None]).logits[0].float() / temperature, -1)  # [P, V]
    entropy = -(p * p.clamp_min(1e-30).log()).sum(-1)  # [P]
    return {"acceptance": float(torch.minimum(p, q).sum(-1).mean()), "target_entropy": float(entropy.mean())}
