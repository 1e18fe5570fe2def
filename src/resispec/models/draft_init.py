"""Draft architectures and their initialisation: random layers, or a subset of the target's own layers.

`DraftArch` describes a draft: `init="target"` copies `source_layers` of the target (its attention
shape, rotary settings, final norm and embedding; MLPs optionally pruned to the `intermediate` neurons
most active on calibration text); `init="random"` builds `layers` random layers of width `hidden` whose
embedding is the target's projected onto its top principal directions. Either may have a reduced
vocabulary of `vocab` tokens (`resispec.models.reduced_vocab`).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch

INIT_STD = 0.02  # random-init weight scale (GPT-2/Llama convention)


@dataclass(frozen=True)
class DraftArch:
    """A draft's shape. `source_layers` (init "target"): the target's layers copied, in order; None
    takes its first `layers - 1` layers and its last (best of the subsets measured on SmolLM2-135M,
    docs/reproduction-notes.md). `vocab`: None = the target's vocabulary."""

    layers: int = 4
    init: str = "target"
    hidden: int = 256
    source_layers: tuple[int, ...] | None = None
    intermediate: int | None = None
    vocab: int | None = None

    def __post_init__(self) -> None:
        if self.init not in ("target", "random"):
            raise ValueError(f"init {self.init!r} must be 'target' or 'random'")
        if self.source_layers is not None:
            object.__setattr__(self, "source_layers", tuple(int(i) for i in self.source_layers))
            object.__setattr__(self, "layers", len(self.source_layers))
        if self.layers < 1:
            raise ValueError(f"layers must be >= 1, got {self.layers!r}")

    def chosen_layers(self, target_layers: int) -> tuple[int, ...]:
        """The target layers a "target" draft copies; ValueError for indices outside the target."""
        chosen = self.source_layers
        if chosen is None:
            chosen = (*range(self.layers - 1), target_layers - 1) if self.layers > 1 else (0,)
        if len(set(chosen)) != len(chosen) or min(chosen) < 0 or max(chosen) >= target_layers:
            raise ValueError(
                f"source_layers {list(chosen)} must be distinct layers of the target's {target_layers}"
            )
        return chosen


def make_draft_config(target_config, *, layers: int, hidden: int, intermediate: int | None = None):
    """A Llama config for a random draft sharing the target's vocabulary and special tokens."""
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


def draft_config(target_config, arch: DraftArch):
    """The draft's Llama config (before any vocabulary reduction)."""
    if arch.init == "random":
        if arch.hidden > target_config.hidden_size:
            raise ValueError(
                f"hidden {arch.hidden!r} exceeds the target's {target_config.hidden_size}: a random draft's "
                "embedding is the target's projected onto fewer principal directions"
            )
        return make_draft_config(
            target_config, layers=arch.layers, hidden=arch.hidden, intermediate=arch.intermediate
        )
    config = copy.deepcopy(target_config)
    config.num_hidden_layers = len(arch.chosen_layers(target_config.num_hidden_layers))
    if arch.intermediate is not None:
        if not 1 <= arch.intermediate <= target_config.intermediate_size:
            raise ValueError(
                f"intermediate {arch.intermediate!r} must be in [1, {target_config.intermediate_size}] "
                "(a pruned target MLP)"
            )
        config.intermediate_size = arch.intermediate
    return config


def init_random(target, config, generator: torch.Generator):
    """Random draft: N(0, 0.02) weights from `generator`, unit norms, and the target's embedding
    projected onto its top `hidden` principal directions (tied input/output embedding)."""
    from transformers import LlamaForCausalLM

    draft = LlamaForCausalLM(config)
    with torch.no_grad():
        for name, param in draft.named_parameters():
            if param.ndim == 1:
                param.fill_(1.0)
            else:
                scaled = "o_proj" in name or "down" in name
                std = INIT_STD / math.sqrt(2 * config.num_hidden_layers) if scaled else INIT_STD
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
def init_from_target(target, config, arch: DraftArch, calibration: torch.Tensor):
    """A draft made of the target's `arch.chosen_layers` (copied), its embedding and final norm; MLPs
    pruned to `config.intermediate_size` neurons by `mlp_importance` on `calibration` [N, S]."""
    from transformers import LlamaForCausalLM

    chosen = arch.chosen_layers(target.config.num_hidden_layers)
    draft = LlamaForCausalLM(config)
    draft.model.embed_tokens.weight.copy_(target.model.embed_tokens.weight)
    draft.model.norm.weight.copy_(target.model.norm.weight)
    importance = mlp_importance(target, chosen, calibration) if arch.intermediate else {}
    for slot, source in enumerate(chosen):
        state = target.model.layers[source].state_dict()
        if source in importance:
            keep = importance[source].topk(config.intermediate_size).indices.sort().values  # [I']
            for name in ("mlp.gate_proj.weight", "mlp.up_proj.weight"):
                state[name] = state[name][keep]
            state["mlp.down_proj.weight"] = state["mlp.down_proj.weight"][:, keep]
        draft.model.layers[slot].load_state_dict(state)
    if config.tie_word_embeddings:
        draft.tie_weights()
    else:
        draft.lm_head.weight.copy_(target.get_output_embeddings().weight)
    return draft


@torch.no_grad()
def mlp_importance(target, layers, calibration: torch.Tensor) -> dict[int, torch.Tensor]:
    """Per layer, each MLP neuron's mean |activation| (the input of down_proj) on `calibration`
    [N, S] times the norm of its down_proj column: {layer: [I]}."""
    means: dict[int, torch.Tensor] = {}

    def hook(layer):
        def record(module, inputs, output):
            means[layer] = inputs[0].abs().float().mean(dim=(0, 1))  # [I]

        return record

    handles = [target.model.layers[i].mlp.down_proj.register_forward_hook(hook(i)) for i in layers]
    try:
        target(input_ids=calibration.to(target.device))
    finally:
        for handle in handles:
            handle.remove()
    return {i: means[i] * target.model.layers[i].mlp.down_proj.weight.float().norm(dim=0) for i in layers}
