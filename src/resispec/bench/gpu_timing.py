"""What ``bench gpu`` times: the models' forwards against the number of tree nodes, and the engine's steps.

Only public interfaces of the engine are used (``resispec.decoding.engine.generate``, the
``StepRecord`` times, ``resispec.decoding.host_syncs.count_host_syncs``), so the bench keeps working while
the engine's internals change; the forwards are timed with plain transformers calls.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import torch

from resispec.bench.engine_runs import EngineRun, engine_kwargs
from resispec.bench.overhead import PARTS, share_interval, steady_steps, step_seconds
from resispec.decoding.kv_cache import cache_kwargs


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op on the CPU)."""
    if device.type == "cpu":
        return
    if hasattr(torch, "accelerator"):
        torch.accelerator.synchronize(device)
    else:
        torch.cuda.synchronize(device)


def spread(seconds: list[float]) -> dict:
    """Median, 10th and 90th percentiles (milliseconds) and the count of a list of seconds."""
    ms = np.asarray(seconds, dtype=np.float64) * 1e3
    if ms.size == 0:
        return {"median_ms": float("nan"), "p10_ms": float("nan"), "p90_ms": float("nan"), "n": 0}
    p10, p90 = np.quantile(ms, [0.1, 0.9])
    return {"median_ms": float(np.median(ms)), "p10_ms": float(p10), "p90_ms": float(p90), "n": int(ms.size)}


def _new_cache(model):
    from transformers import DynamicCache

    try:
        return DynamicCache(config=model.config)
    except TypeError:  # releases whose DynamicCache takes no config
        return DynamicCache()


def _causal_mask(prefix: int, nodes: int, dtype: torch.dtype, device) -> torch.Tensor:
    """Additive mask [1, 1, n, P + n]: the prefix and the earlier new tokens (a chain; a tree mask of the
    same size costs the same)."""
    mask = torch.zeros(nodes, prefix + nodes, dtype=dtype, device=device)
    blocked = torch.ones(nodes, nodes, dtype=torch.bool, device=device).triu(1)  # [n, n]
    mask[:, prefix:].masked_fill_(blocked, torch.finfo(dtype).min)
    return mask[None, None]


def _seconds(fn, device: torch.device) -> float:
    """Wall seconds of ``fn()`` until the device has finished its work."""
    start = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - start


def _repeat(fn, repeats: int, warmup: int, device: torch.device) -> list[float]:
    for _ in range(warmup):
        fn()
    sync(device)
    return [_seconds(fn, device) for _ in range(repeats)]


@torch.no_grad()
def forward_times(model, prefix: torch.Tensor, nodes: list[int], *, repeats: int, warmup: int) -> list[dict]:
    """Per n of ``nodes``: seconds of one forward over n new tokens on top of the cached ``prefix`` [P]
    (long, on the model's device), with the float32 softmax of every row (what verifying or drafting n
    nodes needs); the cache is cut back to the prefix after each."""
    device, length = prefix.device, len(prefix)
    cache = _new_cache(model)
    keyword = cache_kwargs(model, cache)  # the engine's choice of cache= / past_key_values=
    model(input_ids=prefix[None], use_cache=True, **keyword)
    dtype = next(model.parameters()).dtype
    rows = []
    for n in nodes:
        tokens = prefix[torch.arange(n, device=device) % length][None]  # [1, n]; values do not matter
        mask = _causal_mask(length, n, dtype, device)
        positions = torch.arange(length, length + n, device=device)[None]  # [1, n]

        def forward(tokens=tokens, mask=mask, positions=positions, n=n):
            out = model(
                input_ids=tokens, attention_mask=mask, position_ids=positions, use_cache=True, **keyword
            )
            torch.softmax(out.logits[0].float(), dim=-1)  # [n, V]
            cache.crop(-n)  # remove the n new positions (a negative count: every transformers release)

        times = _repeat(forward, repeats, warmup, device)
        rows.append({"nodes": n, **spread(times), "seconds": times})
    return rows


#: the pair profile behind tree ``auto`` (``resispec.decoding.pair_profile``), kept small for the budget:
#: acceptance from one 48-token context, 3 timed repeats, trees up to 128 nodes and 8 levels
AUTO_PROFILE = {"candidates": 8, "repeats": 3, "max_nodes": 128, "max_depth": 8}
AUTO_CONTEXT = 49


def auto_trees(
    target,
    draft,
    prefix: torch.Tensor,
    methods: list[str],
    temperature: float,
    *,
    compile_mode: str | None = None,
) -> dict:
    """Tree ``auto`` per method (``auto-<method>``: Sequoia's hardware-aware tree for that verifier) from a
    pair profile measured here with the pass's ``compile_mode``; ``target`` / ``draft`` as the engine
    takes them."""
    from resispec.decoding.compiled import EngineModes
    from resispec.decoding.drafters import ModelDrafter
    from resispec.decoding.pair_profile import measure_pair
    from resispec.decoding.tree_specs import resolve

    profile = measure_pair(
        target,
        draft,
        ModelDrafter(draft),
        [prefix[:AUTO_CONTEXT]],
        temperatures=[temperature],
        methods=methods,
        settings=AUTO_PROFILE,
        modes=EngineModes(compile_mode=compile_mode),
    )
    return {m: resolve(f"auto-{m}", profile=profile, temperature=temperature) for m in methods}


def _syncs_per_step(run, tokens: int) -> tuple[float, dict]:
    """Blocking host syncs per step (prefill excluded: a 0-token run's count is subtracted; ``ours``: made
    by this package's code, the rest by libraries) and the most frequent places, counted on separate,
    untimed runs (the counting mode slows every torch call)."""
    from resispec.decoding.host_syncs import count_host_syncs

    with count_host_syncs() as prefill_only:
        run(0)
    with count_host_syncs() as counted:
        out = run(tokens)
    steps = max(len(out.steps), 1)
    per_step = (counted.total - prefill_only.total) / steps
    ours = sum(e.ours for e in counted.events) - sum(e.ours for e in prefill_only.events)
    places = dict(counted.by_place().most_common(8))
    return per_step, {
        "ours_per_step": ours / steps,
        "by_kind": dict(counted.by_kind()),
        "top_places": places,
        "steps": len(out.steps),
    }


def engine_config(
    target, draft, prompt, *, label: str, tree, method: str, settings: dict, prefill_s: float
) -> dict:
    """One (tree, method): a warm-up run, a timed run and untimed host-sync counts. Step times exclude
    each run's first step (the draft then forwards the whole prompt) and spread the time between steps
    (the loop's bookkeeping, from the wall time minus the prefill and the steps) over the steps."""
    from resispec.decoding.engine import generate

    def run(tokens: int):
        request = EngineRun(
            method,
            tree,
            settings["temperature"],
            tokens,
            settings["seed"],
            compile_mode=settings["compile"],
            stop_at_eos=False,
        )
        return generate(target, draft, prompt, **engine_kwargs(generate, request, prompt.device))

    run(settings["warmup_tokens"])
    out = run(settings["new_tokens"])
    steps = steady_steps(out, prefill_s)
    seconds = step_seconds(steps)
    count = len(seconds)
    row = {
        "tree": label,
        "nodes": tree.num_nodes,
        "parents": list(tree.parents),
        "method": method,
        "steps": count,
        "accepted_length": len(out.tokens) / max(len(out.steps), 1),
        "step": spread(seconds),
        "step_s": seconds,
        "parts_ms": {p: 1e3 * sum(s[i] for s in steps.parts) / max(count, 1) for i, p in enumerate(PARTS)},
        "between_ms": 1e3 * steps.between_s,
        "between_raw_ms": 1e3 * steps.between_raw_s,
    }
    fast = [total - part[0] - part[1] for total, part in zip(seconds, steps.parts, strict=True)]
    row["overhead"] = list(share_interval(fast, seconds, seed=settings["seed"]))  # [share, low, high]
    row["syncs_per_step"], row["syncs"] = None, {}
    if settings["sync_tokens"] > 0:
        row["syncs_per_step"], row["syncs"] = _syncs_per_step(run, settings["sync_tokens"])
    return row


def prefill_seconds(target, draft, prompt, *, tree, settings: dict) -> float:
    """Median wall seconds of a 0-token ``generate`` (the prefill of both models' state) over 3 runs."""
    from resispec.decoding.engine import generate

    def run():
        request = EngineRun(
            "specinfer",
            tree,
            settings["temperature"],
            0,
            settings["seed"],
            compile_mode=settings["compile"],
            stop_at_eos=False,
        )
        return generate(target, draft, prompt, **engine_kwargs(generate, request, prompt.device)).wall_s

    run()
    return statistics.median(run() for _ in range(3))
