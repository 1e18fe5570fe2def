import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def tiny_target(tmp_path_factory):
    """A tiny random Llama with a byte-level tokenizer whose attention outputs are zeroed, so that its
    peaked next-token distribution depends on the current token only: a teacher a tiny draft can learn
    from a few thousand tokens (a fully random transformer is chaotic in its context)."""
    from resispec.models import tiny
    from resispec.models.loading import load_model

    path = tiny.build("layers=4,hidden=128,seed=1", tmp_path_factory.mktemp("tiny") / "target")
    model = load_model(path)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("o_proj.weight"):
                param.zero_()
    model.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_tokens():
    """Random byte sequences: training and held-out data for the tiny target."""
    generator = torch.Generator().manual_seed(7)
    return [torch.randint(0, 256, (300,), generator=generator).tolist() for _ in range(12)]
