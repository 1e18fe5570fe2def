import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_target(tmp_path_factory):
    """A tiny random Llama (peaked next-token distributions) with a byte-level tokenizer."""
    from resispec import tiny

    return tiny.build("layers=4,hidden=128,seed=1", tmp_path_factory.mktemp("tiny") / "target")


@pytest.fixture(scope="session")
def tiny_tokens():
    """Random byte sequences: training and held-out data for the tiny target."""
    generator = torch.Generator().manual_seed(7)
    return [torch.randint(0, 256, (300,), generator=generator).tolist() for _ in range(12)]
