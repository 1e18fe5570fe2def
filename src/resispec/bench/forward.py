"""The target's tree forward, the yardstick of ``bench verify``'s per-node verifier times.

One verification forward of the decoding engine (``resispec.decoding.target``): the tree's nodes on top
of a cached prefix, with the engine's lazy vocabulary projection (only the nodes the walk visits are
projected later, and that projection is not part of this forward).
"""

from __future__ import annotations

import statistics
import time

import torch


def tree_forward_seconds(
    target_dir: str, *, tree: str = "d5b3", prefix: int = 64, repeats: int = 7, warmup: int = 2,
    device: str = "cpu", dtype: str = "float32", seed: int = 0,
) -> float:  # fmt: skip
    """Median wall seconds of one target forward over the nodes of ``tree`` after a ``prefix``-token
    prompt (random token ids), after ``warmup`` untimed forwards; the cache is cut back after each."""
    from resispec.decoding.kv_cache import cache_length, crop_to
    from resispec.decoding.target import new_target, sync
    from resispec.decoding.trees import parse
    from resispec.models.loading import load_model

    if prefix < 1 or repeats < 1 or warmup < 0:
        raise ValueError(
            f"need prefix >= 1, repeats >= 1, warmup >= 0; got {prefix!r}, {repeats!r}, {warmup!r}"
        )
    model = load_model(target_dir, device=device, dtype=dtype)
    shape = parse(tree)
    target = new_target(model, shape, torch.device(device), False, 1.0)
    generator = torch.Generator().manual_seed(seed)
    vocab = model.config.vocab_size
    with torch.no_grad():
        target.prefill(torch.randint(vocab, (prefix + 1,), generator=generator).to(device))  # caches prefix
        nodes = torch.randint(vocab, (shape.num_nodes,), generator=generator).to(device)  # [N]
        cached, times = cache_length(target.cache), []
        for _ in range(warmup + repeats):
            start = time.perf_counter()
            target.verify_forward(nodes)
            sync(torch.device(device))
            times.append(time.perf_counter() - start)
            crop_to(target.cache, cached)
    return statistics.median(times[warmup:])
