"""Tiny randomly initialised Llama models for the engine tests (CPU, fixed seeds)."""

import pytest
import torch
from engine_helpers import tiny_llama


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def target_model():
    return tiny_llama(0)


@pytest.fixture(scope="module")
def draft_model():
    return tiny_llama(1)
