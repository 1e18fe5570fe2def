"""Static caches, fixed-width masks and phase times of the engine (``decoding.static_cache``,
``decoding.phase_timer``)."""

from __future__ import annotations

import time

import pytest
import torch

from resispec.decoding import engine, phase_timer, trees
from resispec.decoding.layout import tree_layout
from resispec.decoding.static_cache import FixedMask, StaticKV
from resispec.decoding.tree_attention import tree_mask

PROMPT = torch.tensor([1, 5, 3, 7])


def test_compact_copies_slots_down_in_place():
    cache = StaticKV(capacity=8, num_layers=2)
    keys = torch.arange(8.0).reshape(1, 1, 8, 1)
    for layer in range(2):
        cache.write = torch.arange(8)
        cache.update(keys * (layer + 1), -keys, layer)
    pointer = cache.keys[0].data_ptr()
    cache.compact(torch.tensor([6, 3]), start=2)
    assert cache.keys[0][0, 0, :, 0].tolist() == [0, 1, 6, 3, 4, 5, 6, 7]
    assert cache.keys[1][0, 0, :4, 0].tolist() == [0, 2, 12, 6] and cache.values[0][0, 0, 2, 0] == -6
    assert cache.keys[0].data_ptr() == pointer
    cache.length = 5
    cache.crop(-2)
    assert len(cache) == 3
    cache.crop(7)
    assert cache.get_seq_length() == 3


def _filled_cache(layers: int) -> StaticKV:
    """A cache of ``layers`` layers [1, 2, 10, 3] whose every entry is distinct."""
    cache = StaticKV(capacity=10, num_layers=layers)
    cache.write = torch.arange(10)
    for layer in range(layers):
        keys = torch.arange(60.0).reshape(1, 2, 10, 3) + 1000 * layer
        cache.update(keys, -keys, layer)
    return cache


def _ops_of(function) -> list[str]:
    """The aten operators ``function()`` runs."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Record(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    with Record() as record:
        function()
    return record.ops


def test_compaction_is_one_copy_for_the_whole_cache_whatever_its_layers():
    """The kernels of a compaction do not grow with the number of layers (one gather and one indexed copy
    of every layer's keys and values), and it moves exactly what a per-layer gather moves."""
    source = torch.tensor([7, 4, 9])
    ops = {layers: _ops_of(lambda n=layers: _filled_cache(n).compact(source, start=3)) for layers in (1, 6)}
    allocation = {layers: _ops_of(lambda n=layers: _filled_cache(n)) for layers in (1, 6)}
    compaction = {n: len(ops[n]) - len(allocation[n]) for n in ops}
    assert compaction[6] == compaction[1] <= 3, ops[6][len(allocation[6]) :]
    cache, reference = _filled_cache(6), _filled_cache(6)
    cache.compact(source, start=3)
    for layer in range(6):
        for mine, theirs in (
            (cache.keys[layer], reference.keys[layer]),
            (cache.values[layer], reference.values[layer]),
        ):
            expected = theirs.clone()
            expected[:, :, 3:6] = theirs[:, :, source]
            assert torch.equal(mine, expected), layer


@pytest.mark.parametrize("dtype", [torch.bool, torch.float32])
def test_fixed_mask_equals_a_fresh_tree_mask_at_every_offset(dtype):
    """Moving the prefix (forwards, backwards, repeated) rewrites exactly what a fresh mask holds."""
    tree = trees.complete(3, 2)
    layout = tree_layout(tree, torch.device("cpu"))
    capacity = 24
    mask = FixedMask(layout.ancestors, capacity, dtype)
    nodes = torch.arange(tree.num_nodes)
    for offset in (0, 3, 4, 9, 2, 9, 17):
        fresh = tree_mask(layout.ancestors, nodes, nodes[:0], offset, dtype)[0, 0]  # [N, offset + N]
        got = mask.at(offset)[0, 0]
        torch.testing.assert_close(got[:, : offset + tree.num_nodes], fresh)
        blocked = False if dtype == torch.bool else torch.finfo(dtype).min
        assert (got[:, offset + tree.num_nodes :] == blocked).all()
    with pytest.raises(ValueError, match="capacity"):
        mask.at(capacity)


def test_generate_keeps_its_buffers_and_times_its_phases(monkeypatch, target_model, draft_model):
    """Every step runs on the same cache and mask buffers (later generations too), and the five step
    times are non-negative and add up to at most the generation's wall time; specinfer has no shaping."""
    pointers = []
    original = engine._Loop._verify_step

    def spy(self, length):
        layers = self.target.cache.keys
        pointers.append(None if layers[0] is None else layers[0].data_ptr())
        return original(self, length)

    monkeypatch.setattr(engine._Loop, "_verify_step", spy)
    for method in ("specinfer", "ers"):
        generator = torch.Generator().manual_seed(0)
        out = engine.generate(
            target_model,
            draft_model,
            PROMPT,
            method=method,
            tree="d3b2",
            max_new_tokens=20,
            eos_token_id=[],
            generator=generator,
        )
        times = [
            [s.time_draft_s, s.time_target_s, s.time_verify_s, s.time_shaping_s, s.time_commit_s]
            for s in out.steps
        ]
        assert all(t >= 0 for step in times for t in step)
        assert sum(map(sum, times)) <= out.wall_s
        shaping = sum(s.time_shaping_s for s in out.steps)
        assert (shaping == 0) if method == "specinfer" else (shaping > 0)
        assert set(out.steps[0].shaping_time_s) == {"budgeting", "redistribution", "proxy"}
    assert len(set(pointers)) == 1


def test_phase_timer_with_device_events(monkeypatch):
    """The accelerator branch: laps record events and are resolved after the fact, in seconds."""

    class FakeEvent:
        def __init__(self, device=None, enable_timing=False):
            self.at = None

        def record(self):
            self.at = time.perf_counter()

        def elapsed_time(self, other):
            return (other.at - self.at) * 1000.0

    monkeypatch.setattr(phase_timer.torch, "Event", FakeEvent)
    timer = phase_timer.PhaseTimer(torch.device("meta"))
    assert timer.events
    for _ in range(2):
        timer.lap("draft")
        time.sleep(0.01)
        timer.lap("target")
        timer.shaping("budgeting")
        timer.end_step()
    steps = timer.resolve()
    assert (
        len(steps) == 2
        and steps[0]["target"] >= 0.009
        and set(steps[1]) == {"draft", "target", "shaping:budgeting"}
    )


def test_the_cache_goes_by_the_keyword_the_forward_takes():
    """transformers >= 5.24 takes ``cache=``, 5.0-5.23 (a GPU image's 5.17) ``past_key_values=``: the
    engine reads the forward's signature (checked on 5.17 by hand: greedy equals HF greedy there too)."""
    from resispec.decoding.kv_cache import cache_kwargs

    class Old(torch.nn.Module):
        def forward(self, input_ids=None, past_key_values=None, **kwargs): ...

    class New(torch.nn.Module):
        def forward(self, input_ids=None, cache=None, **kwargs): ...

    class Neither(torch.nn.Module):
        def forward(self, *args, **kwargs): ...

    marker = object()
    assert cache_kwargs(Old(), marker) == {"past_key_values": marker}
    assert cache_kwargs(New(), marker) == {"cache": marker}
    assert cache_kwargs(Neither(), marker) == {"cache": marker}
