"""Counting blocking host-device synchronisations, on any device (a CPU included).

On a GPU, every operation that needs a tensor's *value* on the host blocks until the device's queue
drains: ``.item()``, ``.tolist()``, ``.cpu()``, ``.numpy()``, ``bool(t)`` / ``int(t)`` / ``float(t)``
(an ``if`` or ``range`` on a tensor), value-returning comparisons (``torch.equal``, ``allclose``) and
ops whose output shape depends on values (``nonzero``, ``unique``, boolean-mask indexing, ...). Copying
a host Python list to the device (``torch.tensor([...])``, indexing a tensor with a list) is a
synchronous pageable copy. On a CPU all of these are free, so an engine developed there drifts into
using them; :func:`count_host_syncs` makes them visible on the CPU by recording every such call made
under a :class:`~torch.overrides.TorchFunctionMode`, with the innermost non-torch frame that made it.

    with count_host_syncs() as syncs:
        generate(...)
    syncs.total, syncs.by_kind(), syncs.by_place()

``ours`` / ``library`` split events by where they come from: this package's code or a library's
(transformers' model code, for example). What a mode cannot see: syncs inside C++ kernels (none of the
ops listed above hide one that is not listed) and ``Tensor.to("cpu")`` (on a CPU run it cannot be told
apart from ``.to(model_device)``; the engine uses ``.cpu()`` / ``.tolist()`` for host copies).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

__all__ = ["SyncEvent", "SyncCounter", "count_host_syncs"]

# Tensor -> host value: each blocks on the device's queue.
VALUE_READS = {
    torch.Tensor.item: "item",
    torch.Tensor.tolist: "tolist",
    torch.Tensor.cpu: "cpu",
    torch.Tensor.numpy: "numpy",
    torch.Tensor.__bool__: "bool",
    torch.Tensor.__int__: "int",
    torch.Tensor.__float__: "float",
    torch.Tensor.__index__: "index",
    torch.equal: "equal",
    torch.allclose: "allclose",
    torch.Tensor.equal: "equal",
    torch.Tensor.allclose: "allclose",
}
# Ops whose output size depends on the values (the host must learn the size before allocating).
DATA_DEPENDENT = {
    torch.nonzero: "nonzero",
    torch.Tensor.nonzero: "nonzero",
    torch.argwhere: "nonzero",
    torch.unique: "unique",
    torch.Tensor.unique: "unique",
    torch.unique_consecutive: "unique",
    torch.masked_select: "masked_select",
    torch.Tensor.masked_select: "masked_select",
}
FACTORIES = {torch.tensor, torch.as_tensor}
INDEXING = {torch.Tensor.__getitem__, torch.Tensor.__setitem__}
# Frames of these packages are skipped when looking for the code that made a call.
SKIPPED = ("/torch/", "/host_syncs.py")


@dataclass(frozen=True)
class SyncEvent:
    """One blocking call: its ``kind`` and ``where`` (``path:line (function)``, path from the package)."""

    kind: str
    where: str

    @property
    def ours(self) -> bool:
        return self.where.startswith("resispec/")


@dataclass
class SyncCounter:
    """The events recorded so far; ``mark()`` / ``since(mark)`` delimit a region (one step, say)."""

    events: list[SyncEvent] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.events)

    def mark(self) -> int:
        return len(self.events)

    def since(self, mark: int) -> list[SyncEvent]:
        return self.events[mark:]

    def by_kind(self, events: list[SyncEvent] | None = None) -> Counter:
        return Counter(e.kind for e in (self.events if events is None else events))

    def by_place(self, events: list[SyncEvent] | None = None) -> Counter:
        return Counter(f"{e.where}: {e.kind}" for e in (self.events if events is None else events))


def _is_host_data(value) -> bool:
    """A Python number or (nested) list/tuple of them: data that must be copied to the device."""
    if isinstance(value, bool | int | float):
        return True
    return isinstance(value, list | tuple) and not any(isinstance(v, torch.Tensor) for v in value)


def _index_is_host_list(index) -> bool:
    """An index that is a host list (``t[[1, 2]]``) or a boolean mask tensor (``t[mask]``)."""
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if isinstance(item, list):
            return True
        if isinstance(item, torch.Tensor) and item.dtype == torch.bool:
            return True
    return False


def _classify(func, args, kwargs) -> str | None:
    if func in VALUE_READS:
        return VALUE_READS[func]
    if func in DATA_DEPENDENT:
        return DATA_DEPENDENT[func]
    if func in (torch.where, torch.Tensor.nonzero) and len(args) == 1 and not kwargs:
        return "nonzero"
    if func in (torch.repeat_interleave, torch.Tensor.repeat_interleave):
        if len(args) > 1 and isinstance(args[1], torch.Tensor) and "output_size" not in kwargs:
            return "repeat_interleave"
    if func in FACTORIES and args and _is_host_data(args[0]):
        return "host_to_device"
    if func in INDEXING and len(args) > 1 and _index_is_host_list(args[1]):
        return "host_index"
    return None


def _where() -> str:
    """``path:line (function)`` of the innermost frame outside torch and this module."""
    frame = sys._getframe(1)
    while frame is not None and any(s in frame.f_code.co_filename for s in SKIPPED):
        frame = frame.f_back
    if frame is None:
        return "?"
    path = Path(frame.f_code.co_filename).as_posix()
    for package in ("resispec/", "transformers/"):
        if f"/{package}" in path:
            path = package + path.split(f"/{package}", 1)[1]
            break
    return f"{path}:{frame.f_lineno} ({frame.f_code.co_name})"


class _Mode(TorchFunctionMode):
    def __init__(self, counter: SyncCounter) -> None:
        super().__init__()
        self.counter = counter

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        kind = _classify(func, args, kwargs)
        if kind is not None:
            self.counter.events.append(SyncEvent(kind, _where()))
        return func(*args, **kwargs)


@contextmanager
def count_host_syncs() -> Iterator[SyncCounter]:
    """Record every blocking host-device synchronisation made by torch calls inside the block."""
    counter = SyncCounter()
    with _Mode(counter):
        yield counter
