"""The on-machine engine check: greedy tree decoding against transformers' greedy generation."""

from __future__ import annotations

import pytest
import torch

from resispec.bench import gpu_compat, gpu_pair
from resispec.decoding.compiled import compile_mode_for


class _DropsCache(torch.nn.Module):
    """A broken combination: the cache argument is accepted and silently ignored."""

    def __init__(self, model) -> None:
        super().__init__()
        self.inner = model

    def forward(self, *args, cache=None, **kwargs):
        return self.inner(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.inner, name)


@pytest.fixture(scope="module")
def tiny_pair():
    """The bench's tiny float32 pair on the CPU and a 24-token prefix: (target, draft, prefix)."""
    torch.set_num_threads(1)
    prefix = torch.randint(3, gpu_pair.TINY["vocab_size"], (24,), generator=torch.Generator().manual_seed(0))
    target, draft, _ = gpu_pair.build_pair("tiny", torch.device("cpu"), torch.float32, prefix)
    return target, draft, prefix


def test_engine_check_passes_on_a_working_engine_and_fails_on_a_broken_one(tiny_pair):
    target, draft, prefix = tiny_pair
    check = gpu_compat.engine_check(target, draft, prefix)
    assert check["ok"] and len(check["engine"]) == gpu_compat.CHECK_TOKENS
    assert check["cache_keyword"] == "cache"  # transformers >= 5.24
    broken = gpu_compat.engine_check(_DropsCache(target), draft, prefix)
    assert not broken["ok"] and broken["engine"] != broken["transformers"]


@pytest.mark.parametrize("mode", ["none", "auto"])
def test_engine_check_runs_the_engine_with_the_pass_compile_mode(tiny_pair, monkeypatch, mode):
    """The check decodes with the compile mode of the pass it guards (eager pass: eager), and says which."""
    from resispec.decoding import engine

    seen, real = [], engine.generate
    monkeypatch.setattr(
        engine, "generate", lambda *a, **k: seen.append(k.get("compile_mode")) or real(*a, **k)
    )
    target, draft, prefix = tiny_pair
    check = gpu_compat.engine_check(target, draft, prefix, mode)
    assert seen == [mode] and check["ok"]
    assert check["compile_mode"] == compile_mode_for(mode, torch.device("cpu"))
