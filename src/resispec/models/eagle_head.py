"""EAGLE-1 draft head: fc over [token embedding; target feature], one Llama decoder layer, the target's
frozen LM head. Checkpoints use the published EAGLE-1 layout (e.g. yuhuili/EAGLE-llama2-chat-7B):
`config.json` (a Llama config with num_hidden_layers = 1) and `pytorch_model.bin` with the keys
`fc.weight`, `fc.bias`, `embed_tokens.weight` (optional) and `layers.0.{self_attn.{q,k,v,o}_proj,
mlp.{gate,up,down}_proj, post_attention_layernorm}.weight`. Layer 0 has no input norm and the head has
no final norm: its output features go straight into the target's LM head.

A head may draft over a reduced vocabulary (as EAGLE-3 does): its LM head is then a
`resispec.models.reduced_vocab.ReducedVocabHead` over the target's LM-head rows of those tokens (frozen,
q = 0 elsewhere); the checkpoint adds `draft_vocab_size` to config.json and the sorted token ids under
`lm_head.token_ids` (the rows themselves come from the target when loading).

Alignment (as in EAGLE-1): position i of a call pairs the target feature f_t (the target's last hidden
state, after its final norm, at sequence position t) with the token x_{t+1} that follows it; the output
feature at position i predicts f_{t+1}, and its logits predict x_{t+2}.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

WEIGHTS = "pytorch_model.bin"


class EagleCache:
    """Keys and values of the head's single layer, grown in place by `EagleHead.forward`."""

    def __init__(self) -> None:
        self.keys: torch.Tensor | None = None  # [B, kv_heads, L, head_dim]
        self.values: torch.Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.keys is None else self.keys.shape[2]

    @property
    def layers(self) -> list[EagleCache]:
        """One layer (itself), so HF-cache helpers that walk `cache.layers` work on it too."""
        return [self]

    def append(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.keys = keys if self.keys is None else torch.cat([self.keys, keys], dim=2)
        self.values = values if self.values is None else torch.cat([self.values, values], dim=2)
        return self.keys, self.values

    def crop(self, length: int) -> None:
        """Keep the first `length` cached positions (e.g. after rejected drafts)."""
        if self.keys is not None:
            self.keys, self.values = self.keys[:, :, :length], self.values[:, :, :length]


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    variance = x.float().pow(2).mean(-1, keepdim=True)
    return weight * (x.float() * torch.rsqrt(variance + eps)).to(x.dtype)


def _rotate(x: torch.Tensor, positions: torch.Tensor, theta: float) -> torch.Tensor:
    """Llama rotary embedding (rotate-half convention). x: [B, h, S, d]; positions: [B, S]."""
    dim = x.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, device=x.device, dtype=torch.float32) / dim))
    angles = positions[:, None, :, None].float() * inv_freq  # [B, 1, S, d/2]
    cos, sin = torch.cat([angles, angles], -1).cos(), torch.cat([angles, angles], -1).sin()
    half = torch.cat([-x[..., dim // 2 :], x[..., : dim // 2]], dim=-1)
    return (x.float() * cos + half.float() * sin).to(x.dtype)


class _Attention(nn.Module):
    def __init__(self, cfg: dict) -> None:
        super().__init__()
        hidden, heads, kv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
        self.heads, self.kv_heads, self.head_dim = heads, kv, cfg.get("head_dim") or hidden // heads
        self.theta = float(cfg.get("rope_theta", 10000.0))
        self.q_proj = nn.Linear(hidden, heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, kv * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, kv * self.head_dim, bias=False)
        self.o_proj = nn.Linear(heads * self.head_dim, hidden, bias=False)

    def forward(self, x, positions, mask, cache: EagleCache | None) -> torch.Tensor:
        batch, seq, _ = x.shape
        q = self.q_proj(x).view(batch, seq, self.heads, self.head_dim).transpose(1, 2)  # [B, h, S, d]
        k = self.k_proj(x).view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        q, k = _rotate(q, positions, self.theta), _rotate(k, positions, self.theta)
        if cache is not None:
            k, v = cache.append(k, v)  # [B, kv, L + S, d]
        groups = self.heads // self.kv_heads
        k, v = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # [B, h, S, d]
        return self.o_proj(out.transpose(1, 2).reshape(batch, seq, -1))


class _DecoderLayer(nn.Module):
    """EAGLE-1 layer 0: attention on the un-normalised fc output, then a normed MLP."""

    def __init__(self, cfg: dict) -> None:
        super().__init__()
        hidden, inter = cfg["hidden_size"], cfg["intermediate_size"]
        self.eps = float(cfg.get("rms_norm_eps", 1e-6))
        self.self_attn = _Attention(cfg)
        self.mlp = nn.ModuleDict(
            {
                "gate_proj": nn.Linear(hidden, inter, bias=False),
                "up_proj": nn.Linear(hidden, inter, bias=False),
                "down_proj": nn.Linear(inter, hidden, bias=False),
            }
        )
        self.post_attention_layernorm = nn.Module()
        self.post_attention_layernorm.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x, positions, mask, cache) -> torch.Tensor:
        x = x + self.self_attn(x, positions, mask, cache)
        normed = _rms_norm(x, self.post_attention_layernorm.weight, self.eps)
        mlp = self.mlp
        return x + mlp["down_proj"](F.silu(mlp["gate_proj"](normed)) * mlp["up_proj"](normed))


class EagleHead(nn.Module):
    """An EAGLE-1 head bound to a target's frozen embedding and LM head."""

    def __init__(self, config: dict, embed_tokens: torch.Tensor, lm_head: nn.Module) -> None:
        super().__init__()
        self.config = dict(config)
        hidden = config["hidden_size"]
        self.embed_tokens = nn.Embedding.from_pretrained(embed_tokens.detach().clone(), freeze=True)
        self.fc = nn.Linear(2 * hidden, hidden, bias=bool(config.get("bias", True)))
        self.layers = nn.ModuleList([_DecoderLayer(config)])
        self.lm_head = lm_head
        for param in self.lm_head.parameters():
            param.requires_grad_(False)

    def forward(
        self,
        token_ids: torch.Tensor,
        target_features: torch.Tensor,
        past_key_values: EagleCache | None = None,
        *,
        position_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """token_ids [B, S] (x_{t+1}), target_features [B, S, H] (f_t)
        -> (features [B, S, H], logits [B, S, V]).

        `past_key_values`: an `EagleCache` that this call extends in place. `position_ids` [B, S] default
        to cache length + 0..S-1. `attention_mask`: boolean [B or 1, 1, S, L + S] (True = attend), e.g. a
        tree mask; default causal over the cache and the new positions.
        """
        hidden = self.features(
            token_ids,
            target_features,
            past_key_values,
            position_ids=position_ids,
            attention_mask=attention_mask,
        )
        return hidden, self.lm_head(hidden)

    def features(
        self, token_ids, target_features, past_key_values=None, *, position_ids=None, attention_mask=None
    ):
        """The predicted next features [B, S, H] of `forward`, without the LM head."""
        batch, seq = token_ids.shape
        past = 0 if past_key_values is None else len(past_key_values)
        if position_ids is None:
            position_ids = torch.arange(past, past + seq, device=token_ids.device).expand(batch, seq)
        if attention_mask is None:
            attention_mask = torch.ones(seq, past + seq, dtype=torch.bool, device=token_ids.device).tril(past)
        embeds = self.embed_tokens(token_ids).to(target_features.dtype)  # [B, S, H]
        hidden = self.fc(torch.cat([embeds, target_features], dim=-1))  # [B, S, H]
        for layer in self.layers:
            hidden = layer(hidden, position_ids, attention_mask, past_key_values)
        return hidden

    def eagle_state_dict(self) -> dict[str, torch.Tensor]:
        """The weights under their published EAGLE-1 key names (no LM head; a reduced head's token ids)."""
        state = self.state_dict()
        return {k: v for k, v in state.items() if not k.startswith("lm_head.") or k == "lm_head.token_ids"}


def head_config(target_config) -> dict:
    """The EAGLE-1 config.json for a target's (Llama-style) config: one layer of the target's shape."""
    rope = getattr(target_config, "rope_parameters", None) or {}
    heads = target_config.num_attention_heads
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "bos_token_id": target_config.bos_token_id,
        "eos_token_id": target_config.eos_token_id,
        "hidden_act": "silu",
        "hidden_size": target_config.hidden_size,
        "intermediate_size": target_config.intermediate_size,
        "max_position_embeddings": target_config.max_position_embeddings,
        "num_attention_heads": heads,
        "num_hidden_layers": 1,
        "num_key_value_heads": getattr(target_config, "num_key_value_heads", None) or heads,
        "head_dim": getattr(target_config, "head_dim", None) or target_config.hidden_size // heads,
        "rms_norm_eps": target_config.rms_norm_eps,
        "rope_theta": float(rope.get("rope_theta", getattr(target_config, "rope_theta", 10000.0))),
        "rope_scaling": None,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "vocab_size": target_config.vocab_size,
    }


def _lm_head(target_model, token_ids: torch.Tensor | None) -> nn.Module:
    """The target's LM head, or a reduced head over its rows of `token_ids`."""
    from resispec.models.reduced_vocab import ReducedVocabHead

    full = target_model.get_output_embeddings()
    if token_ids is None:
        return full
    rows = full.weight.detach()[token_ids.to(full.weight.device)]
    return ReducedVocabHead(rows, token_ids, target_model.config.vocab_size).to(full.weight.device)


def new_eagle_head(
    target_model, generator: torch.Generator, token_ids: torch.Tensor | None = None
) -> EagleHead:
    """An untrained head for `target_model` (fc ~ U(+-1/sqrt(2H)), layer weights ~ N(0, 0.02)); with
    `token_ids`, over that reduced vocabulary."""
    config = head_config(target_model.config)
    if token_ids is not None:
        config["draft_vocab_size"] = int(token_ids.numel())
    embed = target_model.get_input_embeddings().weight
    head = EagleHead(config, embed, _lm_head(target_model, token_ids))
    with torch.no_grad():
        for name, param in head.named_parameters():
            if name.startswith(("embed_tokens", "lm_head")):
                continue
            if name.endswith("layernorm.weight"):
                param.fill_(1.0)
            elif name == "fc.bias":
                param.zero_()
            else:
                std = 1.0 / math.sqrt(param.shape[1]) if name == "fc.weight" else 0.02
                param.copy_(torch.randn(param.shape, generator=generator) * std)
    return head


def save_eagle_head(head: EagleHead, out_dir: str | Path) -> Path:
    """Write config.json and pytorch_model.bin in the EAGLE-1 layout."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(head.config, indent=2) + "\n")
    torch.save({k: v.detach().cpu().contiguous() for k, v in head.eagle_state_dict().items()}, out / WEIGHTS)
    return out


def load_eagle_head(head_dir: str | Path, target_model) -> EagleHead:
    """Load an EAGLE-1 checkpoint (ours or a published one) bound to `target_model`'s LM head.

    A checkpoint without `embed_tokens.weight` uses the target's input embedding.
    """
    head_dir = Path(head_dir)
    for name in ("config.json", WEIGHTS):
        if not (head_dir / name).is_file():
            raise ValueError(f"EAGLE head directory {head_dir}: missing {name}")
    config = json.loads((head_dir / "config.json").read_text())
    state = torch.load(head_dir / WEIGHTS, map_location="cpu", weights_only=True)
    if config.get("hidden_size") != target_model.config.hidden_size:
        raise ValueError(f"EAGLE head {head_dir}: hidden_size {config.get('hidden_size')} != target's")
    config.setdefault("bias", "fc.bias" in state)
    embed = state.pop("embed_tokens.weight", None)
    if embed is None:
        embed = target_model.get_input_embeddings().weight
    token_ids = state.pop("lm_head.token_ids", None)
    if (token_ids is None) != (config.get("draft_vocab_size") is None):
        raise ValueError(f"EAGLE head {head_dir}: draft_vocab_size and lm_head.token_ids must come together")
    head = EagleHead(config, embed, _lm_head(target_model, token_ids))
    missing, unexpected = head.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.startswith(("lm_head.", "embed_tokens."))]
    if missing or unexpected:
        raise ValueError(f"EAGLE head {head_dir}: missing keys {missing}, unexpected keys {unexpected}")
    device = target_model.get_output_embeddings().weight.device
    return head.to(device=device, dtype=target_model.get_output_embeddings().weight.dtype).eval()


def is_eagle_checkpoint(model_dir: str | Path) -> bool:
    """True when `model_dir` holds an EAGLE-1 head (one layer, an `fc` over two hidden widths), e.g. a
    materialized `hf:yuhuili/EAGLE-llama2-chat-7B`, rather than a full causal LM."""
    model_dir = Path(model_dir)
    if not (model_dir / "config.json").is_file() or not (model_dir / WEIGHTS).is_file():
        return False
    if json.loads((model_dir / "config.json").read_text()).get("num_hidden_layers") != 1:
        return False
    state = torch.load(model_dir / WEIGHTS, map_location="meta", weights_only=True)
    return "fc.weight" in state and "lm_head.weight" not in state and "model.norm.weight" not in state
