"""GPU plan of a configuration, on paper: per model job, the memory and time it needs, and the
`resources` that follow (`resispec info --plan --configfile config/paper.yaml`).

Model sizes are the published ones (`resispec.models.published`); compute per token is the cost model of
`resispec.models.compute` (FLOPs = 2 x MACs). Per decoding job:

- GPU memory = weights of target and draft in the config's dtype + KV caches of both for the longest
  sequence (prompt + max_new_tokens + the tree's nodes) + the activations of one tree forward (hidden
  states of every layer, kept because the engine asks for them, the MLP block, the logits of every node
  in float32, the draft's [N, V] probabilities) + CUDA_CONTEXT_GB;
- host memory = the weights in the config's dtype (loaded on the host first) + the larger checkpoint
  (a whole `.bin` is read into memory) + HOST_OVERHEAD_GB;
- time per step = the larger of FLOPs / peak and weight bytes / bandwidth (batch 1 is memory-bound),
  for the target's tree forward and every draft forward (one per drafted level), + STEP_OVERHEAD_S;
  steps = max_new_tokens (the worst case of one token per step), per prompt and method.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from resispec.models.precision import dtype_for

BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
CUDA_CONTEXT_GB = 0.8  # CUDA context + allocator slack of a torch process
HOST_OVERHEAD_GB = 3.0  # Python, torch, transformers and the corpus in host memory
STEP_OVERHEAD_S = 0.02  # host side of a step: the verification walk, sampler calls, kernel launches
LOAD_GBPS = 1.0  # reading checkpoints from a cluster file system
DOWNLOAD_GBPS = 0.1  # hub download speed assumed for prepare_model of `hf:` sources
SAFETY = 2.0  # runtime limits are the estimate times this (and at least MIN_RUNTIME minutes)
MIN_RUNTIME = 30


@dataclass(frozen=True)
class Gpu:
    name: str
    memory_gb: float
    bandwidth_gbps: float  # HBM bandwidth, GB/s
    tflops: float  # dense float16/bfloat16 tensor-core peak
    bfloat16: bool = True  # native bfloat16 (what config dtype ``auto`` runs in; float32 without it)


GPUS = {  # vendors' data sheets
    "a100-40gb": Gpu("a100-40gb", 40, 1555, 312),
    "a100-80gb": Gpu("a100-80gb", 80, 2039, 312),
    "h100-80gb": Gpu("h100-80gb", 80, 3350, 989),
    "l40s-48gb": Gpu("l40s-48gb", 48, 864, 362),
    "v100-32gb": Gpu("v100-32gb", 32, 900, 125, bfloat16=False),
}


@dataclass(frozen=True)
class ModelSize:
    """A model's published shape reduced to what the plan needs."""

    name: str
    params: int
    layers: int
    kv_width: int  # num_key_value_heads * head_dim
    hidden: int
    intermediate: int
    vocab: int
    macs_per_token: int
    checkpoint_gb: float  # size on disk, in the published dtype


@dataclass(frozen=True)
class JobPlan:
    """One job's needs. `gpu_gb` = 0 for jobs that need no GPU."""

    rule: str
    job: str
    gpu_gb: float
    host_gb: float
    flops_per_step: float
    step_s: float
    steps: int
    minutes: float


def model_size(name: str, spec: dict) -> ModelSize:
    """The size of a config model with an `hf:` source (published facts)."""
    from resispec.models.compute import per_token_macs
    from resispec.models.published import published
    from resispec.models.sources import parse_source

    facts = published(parse_source(spec["source"]).name)
    c = facts.shape()
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    kv_width = (getattr(c, "num_key_value_heads", None) or c.num_attention_heads) * head_dim
    layer = (
        c.hidden_size * (2 * c.num_attention_heads * head_dim + 2 * kv_width)
        + 3 * c.hidden_size * c.intermediate_size
    )
    embeddings = c.vocab_size * c.hidden_size * (1 if c.tie_word_embeddings else 2)
    if facts.layout == "eagle1":  # fc (2H -> H) + one layer + the embedding copy, no LM head
        embeddings = c.vocab_size * c.hidden_size + 2 * c.hidden_size * c.hidden_size
    params = c.num_hidden_layers * layer + embeddings
    stored = 4 if facts.layout == "eagle1" else BYTES.get(str(getattr(c, "torch_dtype", "float32")), 4)
    return ModelSize(
        name,
        params,
        c.num_hidden_layers,
        kv_width,
        c.hidden_size,
        c.intermediate_size,
        c.vocab_size,
        per_token_macs(c),
        params * stored / 1e9,
    )


def tree_shape(spec: str) -> tuple[int, int]:
    """(nodes, levels) of a sheet tree spec; sequoiaNxD: the budget N and depth bound D."""
    from resispec.decoding.tree_specs import resolve

    if m := re.fullmatch(r"sequoia(\d+)x(\d+)", spec.strip().lower()):
        return int(m.group(1)), int(m.group(2))
    tree = resolve(spec)
    return tree.num_nodes, tree.depth


def _kv_gb(model: ModelSize, length: int, nbytes: int) -> float:
    return 2 * model.layers * model.kv_width * length * nbytes / 1e9


def _activations_gb(model: ModelSize, nodes: int, nbytes: int) -> float:
    hidden = (model.layers + 1) * nodes * model.hidden * nbytes  # every layer's hidden states
    mlp = 3 * nodes * model.intermediate * nbytes
    logits = nodes * model.vocab * 4  # float32 logits / probabilities of every node
    return (hidden + mlp + logits) / 1e9


def _seconds(flops: float, weight_bytes: float, gpu: Gpu) -> float:
    return max(flops / (gpu.tflops * 1e12), weight_bytes / (gpu.bandwidth_gbps * 1e9))


def decode_plan(run: dict, sizes: dict[str, ModelSize], settings: dict, gpu: Gpu) -> JobPlan:
    """The needs of one decoding run (`resispec.workflow.sheets.group_runs`), or of one autoregressive
    baseline (`group_baselines`: the target alone, one token per forward, rule ``baseline``)."""
    nbytes = BYTES[dtype_for(settings["dtype"], native_bfloat16=gpu.bfloat16)]
    data = settings["data"]
    models = [sizes[run["target"]]] + ([sizes[run["draft"]]] if "draft" in run else [])
    nodes, levels = tree_shape(run["tree"]) if "tree" in run else (1, 0)
    length = data["prompt_tokens"] + data["max_new_tokens"] + nodes
    weights = sum(model.params for model in models) * nbytes / 1e9
    kv = sum(_kv_gb(model, length, nbytes) for model in models)
    activations = sum(_activations_gb(model, nodes, nbytes) for model in models)
    flops = 2 * nodes * sum(model.macs_per_token for model in models)
    step_s = _seconds(2 * nodes * models[0].macs_per_token, models[0].params * nbytes, gpu) + STEP_OVERHEAD_S
    for draft in models[1:]:
        step_s += levels * _seconds(2 * nodes * draft.macs_per_token / levels, draft.params * nbytes, gpu)
    steps = run["num_prompts"] * len(run["methods"]) * data["max_new_tokens"]
    load_s = sum(model.checkpoint_gb for model in models) / LOAD_GBPS
    return JobPlan(
        "decode" if len(models) > 1 else "baseline",
        run["run"],
        weights + kv + activations + CUDA_CONTEXT_GB,
        weights + max(model.checkpoint_gb for model in models) + HOST_OVERHEAD_GB,
        flops,
        step_s,
        steps,
        (steps * step_s + load_s) / 60,
    )


def prepare_plan(name: str, size: ModelSize) -> JobPlan:
    """Materializing an `hf:` source: a download into the hub cache, no GPU work."""
    minutes = size.checkpoint_gb / DOWNLOAD_GBPS / 60
    return JobPlan("prepare_model", name, 0.0, HOST_OVERHEAD_GB, 0.0, 0.0, 0, minutes)


def plan(config: dict, gpu: Gpu, runs: dict[str, dict], baselines: dict | None = None) -> list[JobPlan]:
    """Every model job of `config` (validated; `runs` from `group_runs`, `baselines` from
    `group_baselines`): prepare_model, then decode, then baseline."""
    used = sorted({run[key] for run in runs.values() for key in ("target", "draft")})
    unsupported = [
        name for name in used if not str(config["models"][name].get("source", "")).startswith("hf:")
    ]
    if unsupported:
        raise ValueError(f"--plan sizes hub models only; {unsupported} have no hf: source (train/eagle/tiny)")
    sizes = {name: model_size(name, config["models"][name]) for name in used}
    jobs = [prepare_plan(name, sizes[name]) for name in used]
    jobs += [decode_plan(runs[key], sizes, config, gpu) for key in sorted(runs)]
    return jobs + [decode_plan(baselines[key], sizes, config, gpu) for key in sorted(baselines or {})]


def recommended_resources(jobs: list[JobPlan]) -> dict[str, dict[str, int]]:
    """`resources.rules` for the config: the largest need of each rule, memory rounded up to 4 GB,
    runtime SAFETY times the estimate rounded up to 30 minutes."""
    rules: dict[str, dict[str, int]] = {}
    for rule, planned in (("prepare_model", ("prepare_model",)), ("decode", ("decode", "baseline"))):
        mine = [job for job in jobs if job.rule in planned]  # a baseline has decode's resources
        if mine:
            host = max(job.host_gb for job in mine)
            minutes = max(MIN_RUNTIME, SAFETY * max(job.minutes for job in mine))
            rules[rule] = {"mem_mb": 4000 * math.ceil(host / 4), "runtime": 30 * math.ceil(minutes / 30)}
    return rules


COLUMNS = (("rule", 14, ""), ("job", 66, ""), ("GPU GB", 8, ".1f"), ("host GB", 9, ".1f"))
COLUMNS += (("TFLOP/step", 11, ".3f"), ("s/step", 8, ".3f"), ("steps", 7, "d"), ("min", 8, ".1f"))


def format_plan(jobs: list[JobPlan], gpu: Gpu) -> str:
    """The plan as a text table, with the resources it recommends."""
    header = f"{gpu.name} ({gpu.memory_gb:g} GB, {gpu.bandwidth_gbps:g} GB/s, {gpu.tflops:g} TFLOP/s)"
    lines = [
        f"GPU plan on {header}",
        "".join(f"{name:<{w}}" if not f else f"{name:>{w}}" for name, w, f in COLUMNS),
    ]
    for job in jobs:
        values = (
            job.rule,
            job.job,
            job.gpu_gb,
            job.host_gb,
            job.flops_per_step / 1e12,
            job.step_s,
            job.steps,
        )
        values += (job.minutes,)
        cells = [
            f"{v:<{w}}" if not f else f"{v:>{w}{f}}" for v, (_, w, f) in zip(values, COLUMNS, strict=True)
        ]
        lines.append("".join(cells))
    too_big = [job.job for job in jobs if job.gpu_gb > gpu.memory_gb] or "none"
    largest = max(job.gpu_gb for job in jobs)
    decode_hours = sum(job.minutes for job in jobs if job.rule in ("decode", "baseline")) / 60
    lines.append(f"largest GPU need: {largest:.1f} GB; jobs over {gpu.name}: {too_big}")
    lines.append(f"total decode time: {decode_hours:.1f} GPU hours")
    lines.append(f"resources.rules for the config: {recommended_resources(jobs)}")
    return "\n".join(lines)
