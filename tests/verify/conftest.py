"""Fixtures for the verification-core tests (helpers live in verify_cases.py)."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)
