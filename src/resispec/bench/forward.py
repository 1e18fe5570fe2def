"""The target's tree forward, the yardstick of ``bench verify``'s per-node verifier times.

One verification forward of the decoding engine as the pair profile times it
(``resispec.decoding.costs.target_seconds``): as many nodes as the tree has, on top of a cached prefix,
with the root's lazy vocabulary projection (the attention pattern does not change the cost).
"""

from __future__ import annotations

import torch


def tree_forward_seconds(
    target_dir: str,
    *,
    tree: str = "d5b3",
    prefix: int = 64,
    repeats: int = 7,
    warmup: int = 2,
    device: str = "cpu",
    dtype: str = "float32",
    seed: int = 0,
) -> float:
    """Median wall seconds of one target forward over the nodes of ``tree`` after a ``prefix``-token
    prompt (random token ids), after ``warmup`` untimed forwards; the cache is cut back after each."""
    from resispec.decoding.costs import target_seconds
    from resispec.decoding.trees import parse
    from resispec.models.loading import load_model

    if prefix < 1 or repeats < 1 or warmup < 0:
        raise ValueError(
            f"need prefix >= 1, repeats >= 1, warmup >= 0; got {prefix!r}, {repeats!r}, {warmup!r}"
        )
    model = load_model(target_dir, device=device, dtype=dtype)
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(model.config.vocab_size, (prefix + 1,), generator=generator).to(device)
    with torch.no_grad():
        for _ in range(warmup):
            target_seconds(model, tokens, [parse(tree).num_nodes], 1)
        return target_seconds(model, tokens, [parse(tree).num_nodes], repeats)[0]
