"""Tiny randomly initialised Llama models for the engine tests (CPU, fixed seeds)."""

import pytest
import torch
from tiny_models import tiny_llama


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def target_model():
    return tiny_llama(0)


@pytest.fixture(scope="module")
def draft_model():
    return tiny_llama(1)


@pytest.fixture
def eager_backend(monkeypatch):
    """``torch.compile`` with dynamo's ``"eager"`` backend in place of the engine's modes (inductor's C++
    compilation takes minutes per graph on a CPU); yields dynamo's counters (graphs:
    ``["stats"]["unique_graphs"]``)."""
    import torch._dynamo

    from resispec.decoding import compiled

    def capture(fn, mode):
        return torch.compile(fn, backend="eager", dynamic=False)

    monkeypatch.setattr(compiled, "_compile", capture)
    torch._dynamo.reset()
    yield torch._dynamo.utils.counters
    torch._dynamo.reset()
