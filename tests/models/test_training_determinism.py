"""Same options and seed, same weights: draft and EAGLE training in subprocesses whose callers set
different `torch.set_num_threads`, compared bitwise.

Without pinning, the bits would differ on CPU: oneDNN's bfloat16 GEMMs and MKL's long-reduction float32
GEMMs choose their reduction splits by thread count (docs/reproduction-notes.md). Training pins the
thread count to its `threads` option (`resispec.models.training.pinned_threads`), so the caller's setting
must not matter. The target here is 256 wide and the draft copies one of its layers with a reduced
vocabulary, under bfloat16 autocast. Measured on this project's CPU (Xeon, AMX): with `threads` set to
the caller's count instead, the EAGLE head trained here differs between 1 and 3 threads (fc, attention
projections); pinned to 1 thread, a caller with 3 gives the 1-thread bits.
"""

import json
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from resispec.models import tiny

SCRIPT = """
import json, sys, torch
torch.set_num_threads(int(sys.argv[1]))
from resispec.models import draft_training, eagle_training
target, tokens, out = sys.argv[2], json.loads(open(sys.argv[3]).read()), sys.argv[4]
common = dict(token_ids=tokens[:10], heldout=tokens[10:], steps=6, teacher_tokens=2000, seq_len=32,
              batch_size=4, threads=1, amp=True, seed=3, temperatures=(1.0, 0.6), loss="kl+tv")
draft_training.train_draft(target, out + "/draft", arch={"layers": 1, "vocab": 128, "intermediate": 256},
                           max_compute_ratio=10.0, **common)
eagle_training.train(target, out + "/eagle", **common)
print(torch.get_num_threads())
"""


def _train(threads: int, target, tokens_file, out) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(threads), str(target), str(tokens_file), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_training_is_bitwise_reproducible_across_caller_thread_counts(tiny_tokens, tmp_path):
    target = tiny.build("layers=2,hidden=256,seed=2", tmp_path / "target")
    tokens_file = tmp_path / "tokens.json"
    tokens_file.write_text(json.dumps(tiny_tokens))
    restored = [_train(threads, target, tokens_file, tmp_path / f"t{threads}") for threads in (1, 3)]
    assert restored == ["1", "3"]  # the caller's thread count is restored after training
    first, second = (
        load_file(tmp_path / "t1/draft/model.safetensors"),
        load_file(tmp_path / "t3/draft/model.safetensors"),
    )
    assert first.keys() == second.keys()
    for name in first:
        assert torch.equal(first[name], second[name]), name
    heads = [torch.load(tmp_path / f"t{t}/eagle/pytorch_model.bin", weights_only=True) for t in (1, 3)]
    for name in heads[0]:
        assert torch.equal(heads[0][name], heads[1][name]), name
    reports = [json.loads((tmp_path / f"t{t}/draft/training.json").read_text()) for t in (1, 3)]
    assert reports[0]["loss_last"] == reports[1]["loss_last"]
    assert reports[0]["loss_last"] != reports[0]["loss_first"]  # it did train


@pytest.mark.parametrize("native", [True, False])
def test_bfloat16_autocast_on_a_cpu_only_where_it_is_native(monkeypatch, native):
    """``amp: null``: bfloat16 on CUDA, and on a CPU only with AVX512-BF16 or AMX (torch emulates it
    elsewhere, several times slower than float32); an explicit ``amp`` wins; the report says what ran."""
    from resispec.models import training

    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: native)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    assert training.TrainOptions(device="cpu").use_amp is native
    assert training.TrainOptions(device="cpu").report()["amp"] is native
    assert training.TrainOptions(device="cuda:0").use_amp is True
    assert training.TrainOptions(device="cpu", amp=True).use_amp is True
    assert training.TrainOptions(device="cpu", amp=False).use_amp is False


def test_the_config_passes_amp_to_training():
    from resispec.workflow.config import load_config
    from resispec.workflow.steps.prepare_model import train_options

    config = load_config("config/config.yaml")
    default = config["models"]["draft-default"]["train"]
    assert train_options(default, {})["amp"] is None  # the schema's default
    assert train_options({"amp": False, "steps": 3}, {"seed": 1})["amp"] is False
