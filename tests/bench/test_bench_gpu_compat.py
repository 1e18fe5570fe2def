"""The engine on older transformers (``cache=`` renamed) and the on-machine engine check."""

from __future__ import annotations

import torch

from resispec.bench import gpu_compat, gpu_pair


class _OldForward(torch.nn.Module):
    """A model whose forward takes the cache as ``past_key_values`` (transformers < 5.24)."""

    def __init__(self) -> None:
        super().__init__()
        self.config = "its config"

    def forward(self, input_ids=None, past_key_values=None, **kwargs):
        return input_ids, past_key_values, kwargs


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


def test_adapt_renames_the_cache_argument_only_where_needed():
    old = _OldForward()
    wrapped = gpu_compat.adapt(old)
    assert isinstance(wrapped, gpu_compat.CacheKeyword) and wrapped.config == "its config"
    assert wrapped(input_ids=1, cache="kv", use_cache=True) == (1, "kv", {"use_cache": True})
    assert list(wrapped.parameters()) == list(old.parameters())
    new = gpu_compat.CacheKeyword(old)  # takes cache=
    assert gpu_compat.adapt(new) is new


def test_engine_check_passes_on_a_working_engine_and_fails_on_a_broken_one():
    torch.set_num_threads(1)
    prefix = torch.randint(3, gpu_pair.TINY["vocab_size"], (24,), generator=torch.Generator().manual_seed(0))
    target, draft, _ = gpu_pair.build_pair("tiny", torch.device("cpu"), torch.float32, prefix)
    check = gpu_compat.engine_check(target, draft, prefix)
    assert check["ok"] and len(check["engine"]) == gpu_compat.CHECK_TOKENS
    broken = gpu_compat.engine_check(_DropsCache(target), draft, prefix)
    assert not broken["ok"] and broken["engine"] != broken["transformers"]
