"""Builders for the audit tests: logged nodes as `resispec.decoding.records.audit_entry` writes them."""

import torch

from resispec.decoding.records import audit_entry


def random_pair(vocab: int, seed: int, sharpness: float = 2.0) -> tuple[torch.Tensor, torch.Tensor]:
    """A (target, draft) pair of float64 distributions [V] with overlapping but different shapes."""
    generator = torch.Generator().manual_seed(seed)
    base = sharpness * torch.randn(vocab, generator=generator, dtype=torch.float64)
    target = torch.softmax(base + torch.randn(vocab, generator=generator, dtype=torch.float64), -1)
    draft = torch.softmax(base + torch.randn(vocab, generator=generator, dtype=torch.float64), -1)
    return target, draft


def logged_node(vocab: int = 12, k: int = 3, top: int = 4, seed: int = 0, **extra) -> dict:
    """A logged node: the top-``top`` union of target and draft, the remainders, k candidates."""
    target, draft = random_pair(vocab, seed)
    generator = torch.Generator().manual_seed(seed)
    candidates = torch.multinomial(draft, k, replacement=True, generator=generator) if k else torch.zeros(0)
    return audit_entry(target, draft, candidates, top, **extra)
