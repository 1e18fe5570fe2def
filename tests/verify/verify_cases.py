"""Random (target, draft, k) cases shared by the verification-core tests."""

import numpy as np
import torch


def dirichlet_pair(rng: np.random.Generator, vocab: int, concentration: float):
    """(target_probs, draft_probs) float64 tensors [V] from independent Dirichlet draws."""
    target = rng.dirichlet(np.full(vocab, concentration))
    draft = rng.dirichlet(np.full(vocab, concentration))
    return torch.from_numpy(target / target.sum()), torch.from_numpy(draft / draft.sum())


def random_cases(seed: int, count: int, vocab_range=(2, 64), k_range=(1, 11)):
    """``count`` random (target, draft, k) cases: V and k uniform, concentration log-uniform in [0.05, 5]."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        vocab = int(rng.integers(vocab_range[0], vocab_range[1] + 1))
        k = int(rng.integers(k_range[0], k_range[1] + 1))
        concentration = float(np.exp(rng.uniform(np.log(0.05), np.log(5.0))))
        target, draft = dirichlet_pair(rng, vocab, concentration)
        yield target, draft, k
