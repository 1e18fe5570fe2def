"""``PhaseTimer`` on an accelerator: events come from a pool reused after each ``resolve``, so many
generations construct a bounded number of events, and the laps resolve to the same phase times."""

from __future__ import annotations

import torch

from resispec.decoding import phase_timer


class _FakeEvent:
    made = 0
    clock = 0.0

    def __init__(self, device=None, enable_timing=False):
        type(self).made += 1
        self.at = None

    def record(self):
        type(self).clock += 1.0
        self.at = type(self).clock

    def elapsed_time(self, other):
        return (other.at - self.at) * 1000.0


def test_events_are_pooled_and_times_unchanged(monkeypatch):
    """Twenty generations of three steps, each with its own timer resolved at its end (as `generate`
    does): one generation's events are made, then recorded again."""
    monkeypatch.setattr(phase_timer.torch, "Event", _FakeEvent)
    monkeypatch.setattr(phase_timer, "_POOLS", {})
    _FakeEvent.made = 0
    for _ in range(20):
        timer = phase_timer.PhaseTimer(torch.device("meta"))
        for _ in range(3):
            timer.lap("draft")
            timer.lap("target")
            timer.lap("target")
            timer.end_step()
        assert timer.resolve() == [{"draft": 1.0, "target": 2.0}] * 3
    assert _FakeEvent.made <= 12  # one generation's marks (the first mark and 9 laps, +1 after resolve)
