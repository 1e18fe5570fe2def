"""Stand-in checkpoints for a dress rehearsal of a configuration: every hub repository it names, with
the published config keys, files and tokenizer (`resispec.models.published`) but small random weights,
filed into a Hugging Face hub cache (`resispec.models.hub_cache`) so that the package's real `hf:` path
(`snapshot_download`, then `from_pretrained`) loads them with `HF_HUB_OFFLINE=1`.

Only the sizes shrink (STAND_IN_SHAPE: hidden size, MLP width, layers, heads; the grouped-query ratio is
kept); architecture class, vocabulary size, BOS/EOS/pad ids, rope settings, tied embeddings, maximum
positions, norm epsilon, stored dtype and file names are the published ones.
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path

import torch

from resispec.models import hub_cache
from resispec.models.published import PublishedModel, published

log = logging.getLogger(__name__)

# Small enough for a CPU run of every paper job, large enough for multi-head attention with GQA.
STAND_IN_SHAPE = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 8,
}
INIT_STD = 0.02  # normal init of every weight matrix (norms are ones), as Llama's initializer_range


def hub_repositories(models: dict) -> list[str]:
    """The repository ids of every `hf:REPO[@REV]` source among `models` (a config's `models` block)."""
    from resispec.models.sources import parse_source

    repos = []
    for spec in models.values():
        source = spec.get("source", "")
        if source.startswith("hf:") and parse_source(source).name not in repos:
            repos.append(parse_source(source).name)
    return repos


def stand_in_config(facts: PublishedModel) -> dict:
    """The published config.json with the sizes of STAND_IN_SHAPE (KV heads keep their ratio)."""
    config = dict(facts.config)
    heads = STAND_IN_SHAPE["num_attention_heads"]
    ratio = config["num_attention_heads"] // (
        config.get("num_key_value_heads") or config["num_attention_heads"]
    )
    config.update(STAND_IN_SHAPE, num_key_value_heads=max(1, heads // ratio))
    if facts.layout == "eagle1":
        config["num_hidden_layers"] = 1
    return config


def _init(shape: tuple[int, ...], generator: torch.Generator, name: str) -> torch.Tensor:
    if name.endswith("norm.weight"):
        return torch.ones(shape)
    return torch.randn(shape, generator=generator) * INIT_STD


def causal_lm_state(config: dict, generator: torch.Generator, legacy_rotary: bool) -> dict[str, torch.Tensor]:
    """Random weights of `LlamaForCausalLM` for `config` under its state-dict keys (plus the
    `rotary_emb.inv_freq` buffers that transformers 4.28-era `.bin` checkpoints also stored)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    with torch.device("meta"):
        model = LlamaForCausalLM(LlamaConfig.from_dict(config))
    state = {name: _init(tuple(p.shape), generator, name) for name, p in model.state_dict().items()}
    if legacy_rotary:
        head_dim = config["hidden_size"] // config["num_attention_heads"]
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        for layer in range(config["num_hidden_layers"]):
            state[f"model.layers.{layer}.self_attn.rotary_emb.inv_freq"] = inv_freq.clone()
    return state


def eagle_head_state(config: dict, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Random weights under the EAGLE-1 head's keys, as its public model code defines them
    (SafeAILab/EAGLE `model/cnets.py`, class `Model`, EAGLE-1 release of December 2023): `embed_tokens`,
    `fc` = Linear(2H, H) with bias, and decoder layer 0 without `input_layernorm`; no final norm and no
    LM head (the target's is used). The published checkpoint stores these in float32."""
    hidden, inter, vocab = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    kv = config["num_key_value_heads"] * (hidden // config["num_attention_heads"])
    shapes = {
        "embed_tokens.weight": (vocab, hidden),
        "fc.weight": (hidden, 2 * hidden),
        "fc.bias": (hidden,),
        "layers.0.self_attn.q_proj.weight": (hidden, hidden),
        "layers.0.self_attn.k_proj.weight": (kv, hidden),
        "layers.0.self_attn.v_proj.weight": (kv, hidden),
        "layers.0.self_attn.o_proj.weight": (hidden, hidden),
        "layers.0.mlp.gate_proj.weight": (inter, hidden),
        "layers.0.mlp.up_proj.weight": (inter, hidden),
        "layers.0.mlp.down_proj.weight": (hidden, inter),
        "layers.0.post_attention_layernorm.weight": (hidden,),
    }
    return {name: _init(shape, generator, name) for name, shape in shapes.items()}


def _split(state: dict) -> list[dict]:
    names = sorted(state)
    half = len(names) // 2
    return [{n: state[n] for n in names[:half]}, {n: state[n] for n in names[half:]}]


def write_weights(state: dict[str, torch.Tensor], dest: Path, layout: str) -> None:
    """Save `state` in a published weight layout (`resispec.models.published.WEIGHT_LAYOUTS`)."""
    from safetensors.torch import save_file

    state = {name: tensor.contiguous() for name, tensor in state.items()}
    if layout in ("safetensors", "bin", "eagle_bin"):
        if layout == "safetensors":
            save_file(state, dest / "model.safetensors", metadata={"format": "pt"})
        else:
            torch.save(state, dest / "pytorch_model.bin")
        return
    stem, suffix = ("model", "safetensors") if layout == "safetensors_sharded" else ("pytorch_model", "bin")
    weight_map, total = {}, 0
    for index, shard in enumerate(_split(state), start=1):
        name = f"{stem}-{index:05d}-of-00002.{suffix}"
        if suffix == "safetensors":
            save_file(shard, dest / name, metadata={"format": "pt"})
        else:
            torch.save(shard, dest / name)
        weight_map.update({key: name for key in shard})
        total += sum(t.numel() * t.element_size() for t in shard.values())
    index_file = dest / f"{stem}.{suffix}.index.json"
    index_file.write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))


def write_stand_in(
    facts: PublishedModel, dest: Path, tokenizer_file: Path, generator: torch.Generator
) -> None:
    """All files of one stand-in repository into `dest`."""
    from resispec.models.stand_in_tokenizer import write_tokenizer

    config = stand_in_config(facts)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    if facts.layout == "eagle1":
        write_weights(eagle_head_state(config, generator), dest, "eagle_bin")
        return
    dtype = getattr(torch, str(config.get("torch_dtype", "float32")))
    state = causal_lm_state(config, generator, facts.legacy_rotary_buffers)
    write_weights({k: v.to(dtype) for k, v in state.items()}, dest, facts.weights)
    if facts.generation_config is not None:
        (dest / "generation_config.json").write_text(json.dumps(facts.generation_config, indent=2) + "\n")
    write_tokenizer(dest, tokenizer_file, facts.tokenizer_config or {}, facts.tokenizer_files)


def build_rehearsal_cache(
    models: dict, hub_cache_dir: str | Path, texts: list[str], *, cache_dir: str | Path, seed: int = 0
) -> dict[str, Path]:
    """Fill `hub_cache_dir` (an `HF_HUB_CACHE`, i.e. `$HF_HOME/hub`) with a stand-in of every hub
    repository among `models` (a config's `models` block); returns their snapshot folders by repo id.

    `texts` train the shared Llama-family tokenizer (cached under `cache_dir`); weights are drawn from
    one torch.Generator seeded with `seed`, repository by repository in the config's order.
    """
    from resispec.models.stand_in_tokenizer import tokenizer_model

    repos = hub_repositories(models)
    facts = [published(repo) for repo in repos]  # every unknown repo fails before any work
    tokenizer_file = tokenizer_model(texts, cache_dir)
    generator = torch.Generator().manual_seed(seed)
    snapshots = {}
    for fact in facts:
        with tempfile.TemporaryDirectory() as staging:
            write_stand_in(fact, Path(staging), tokenizer_file, generator)
            snapshots[fact.repo] = hub_cache.write_snapshot(
                hub_cache_dir, fact.repo, staging, revision=fact.revision
            )
        log.info("stand-in %s: %s", fact.repo, snapshots[fact.repo])
    return snapshots
