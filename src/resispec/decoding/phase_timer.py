"""Per-step phase times without host synchronisation.

``lap(phase)`` attributes the time since the previous lap to ``phase``. On a CPU the clock is
``time.perf_counter`` (work is synchronous there, so it is exact). On an accelerator each lap records a
device event (``torch.Event(enable_timing=True)``) on the current stream, which does not block; the
elapsed times are read in :meth:`PhaseTimer.resolve`, after the caller's final synchronisation. The events
come from a pool per device, grown on demand: a timer takes the device's pool when it starts (the engine
makes one timer per generation) and gives it back in ``resolve`` (which reads and drops the steps), so
the next generation records the same events again instead of making new ones.
"""

from __future__ import annotations

import time

import torch

__all__ = ["PhaseTimer"]

_POOLS: dict[torch.device, list] = {}  # per device, the events of resolved timers (taken by the next timer)


class PhaseTimer:
    """Laps grouped by step: ``lap(phase)`` within a step, ``end_step()`` closes it; ``resolve()`` returns
    one ``{phase: seconds}`` per closed step."""

    def __init__(self, device: torch.device) -> None:
        self.device = torch.device(device)
        self.events = self.device.type != "cpu"
        self._steps: list[list[tuple[str, object, object]]] = []
        self._laps: list[tuple[str, object, object]] = []
        self._pool: list[torch.Event] | None = None  # taken from the device's pool at the first mark
        self._used = 0
        self._last = self._mark()

    def _mark(self):
        if not self.events:
            return time.perf_counter()
        if self._pool is None:
            self._pool = _POOLS.pop(self.device, [])
        if self._used == len(self._pool):
            self._pool.append(torch.Event(device=self.device, enable_timing=True))
        event = self._pool[self._used]
        self._used += 1
        event.record()
        return event

    def restart(self) -> None:
        """Drop the time since the last lap (e.g. host work that belongs to no phase); after ``resolve``,
        start timing again."""
        self._last = self._mark()

    def lap(self, phase: str) -> None:
        now = self._mark()
        self._laps.append((phase, self._last, now))
        self._last = now

    def shaping(self, key: str) -> None:
        """A verifier's shaping phase ended (``verify.batched``'s ``tick``): lap "shaping:<key>"."""
        self.lap(f"shaping:{key}")

    def end_step(self) -> None:
        self._steps.append(self._laps)
        self._laps = []

    def resolve(self) -> list[dict[str, float]]:
        """Seconds per phase of each closed step (call after synchronising the device)."""
        out = []
        for laps in self._steps:
            totals: dict[str, float] = {}
            for phase, start, stop in laps:
                seconds = stop - start if not self.events else start.elapsed_time(stop) / 1000.0
                totals[phase] = totals.get(phase, 0.0) + seconds
            out.append(totals)
        self._steps, self._laps, self._used = [], [], 0  # read: every event may be recorded again
        if self.events:  # back to the device's pool: the next timer (the next generation) records them
            _POOLS[self.device], self._pool = self._pool or [], None
            self._last = None  # a lap after this needs restart() first
        else:
            self._last = self._mark()
        return out
