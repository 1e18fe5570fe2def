"""(target, draft) probability pairs for the benchmarks: synthetic Zipf-like ones or logged ones."""

from __future__ import annotations

from pathlib import Path

import torch


def zipf_pair(
    vocab: int, generator: torch.Generator, *, exponent: float = 1.0, noise: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """A synthetic Zipf-like pair (float64 [V] each).

    Both share Zipf logits -exponent * log(rank) over a random permutation of the vocabulary; target and
    draft add independent Gaussian noise of standard deviation ``noise`` to them before the softmax.
    """
    rank = torch.arange(1, vocab + 1, dtype=torch.float64)
    base = (-exponent * torch.log(rank))[torch.randperm(vocab, generator=generator)]  # [V]
    target_logits = base + noise * torch.randn(vocab, generator=generator, dtype=torch.float64)
    draft_logits = base + noise * torch.randn(vocab, generator=generator, dtype=torch.float64)
    return torch.softmax(target_logits, -1), torch.softmax(draft_logits, -1)


def synthetic_pairs(vocab: int, count: int, seed: int, **kwargs) -> list[tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(seed)
    return [zipf_pair(vocab, generator, **kwargs) for _ in range(count)]


def load_records(path: str | Path, limit: int | None = None) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Pairs logged by a decoding run.

    Format: a ``.pt`` file (``torch.save``) holding a dict with float tensors ``target_probs`` [N, V] and
    ``draft_probs`` [N, V] (already temperature-processed, one row per tree node).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"--records file {str(path)!r} does not exist")
    data = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(data, dict):
        raise ValueError(
            f"{path}: expected a dict with target_probs and draft_probs, got {type(data).__name__}"
        )
    for key in ("target_probs", "draft_probs"):
        if key not in data:
            raise ValueError(f"{path}: missing key {key!r} (has {sorted(data)})")
        if not isinstance(data[key], torch.Tensor) or data[key].ndim != 2:
            raise ValueError(f"{path}: {key!r} must be a 2-D tensor [N, V]")
    if data["target_probs"].shape != data["draft_probs"].shape:
        raise ValueError(
            f"{path}: target_probs {tuple(data['target_probs'].shape)} and draft_probs "
            f"{tuple(data['draft_probs'].shape)} differ in shape"
        )
    rows = data["target_probs"].shape[0] if limit is None else min(limit, data["target_probs"].shape[0])
    return [(data["target_probs"][i].double(), data["draft_probs"][i].double()) for i in range(rows)]
