"""The host-sync counter sees every kind of blocking call it claims to, and nothing that does not block."""

from __future__ import annotations

import pytest
import torch

from resispec.decoding.host_syncs import count_host_syncs

T = torch.arange(6, dtype=torch.float32)
MASK = T > 2

BLOCKING = [
    ("item", lambda: T[0].item()),
    ("tolist", lambda: T.tolist()),
    ("cpu", lambda: T.cpu()),
    ("numpy", lambda: T.numpy()),
    ("bool", lambda: bool(T[3] > 1)),
    ("int", lambda: int(T[2])),
    ("float", lambda: float(T[2])),
    ("index", lambda: list(range(6))[T.long()[2]]),
    ("equal", lambda: torch.equal(T, T)),
    ("allclose", lambda: torch.allclose(T, T)),
    ("nonzero", lambda: torch.nonzero(MASK)),
    ("nonzero", lambda: torch.where(MASK)),
    ("unique", lambda: torch.unique(T)),
    ("masked_select", lambda: torch.masked_select(T, MASK)),
    ("repeat_interleave", lambda: torch.repeat_interleave(T, torch.ones(6, dtype=torch.long))),
    ("host_to_device", lambda: torch.tensor([1, 2, 3])),
    ("host_index", lambda: T[[0, 2]]),
    ("host_index", lambda: T[MASK]),
]

NON_BLOCKING = [
    ("arithmetic", lambda: (T * 2 + 1).sum()),
    ("index_select", lambda: T.index_select(0, T.long()[:2])),
    ("device tensor index", lambda: T[T.long()[:2]]),
    ("where with three arguments", lambda: torch.where(MASK, T, -T)),
    ("slicing", lambda: T[1:3]),
    ("int index", lambda: T[2]),
    ("repeat_interleave with output_size", lambda: torch.repeat_interleave(T, T.long(), output_size=15)),
    ("argmax", lambda: T.argmax()),
]


@pytest.mark.parametrize(("kind", "call"), BLOCKING, ids=[f"{k}-{i}" for i, (k, _) in enumerate(BLOCKING)])
def test_each_blocking_call_is_counted_once_with_its_kind_and_place(kind, call):
    """A blocking call is recorded once, with its kind, at this file's line."""
    with count_host_syncs() as syncs:
        call()
    kinds = syncs.by_kind()
    assert kinds[kind] >= 1, dict(kinds)
    assert all("test_host_syncs.py" in e.where for e in syncs.events), syncs.events


@pytest.mark.parametrize(("name", "call"), NON_BLOCKING, ids=[n for n, _ in NON_BLOCKING])
def test_device_side_work_is_not_counted(name, call):
    """Pure device work (arithmetic, device-tensor indexing, slicing) records nothing."""
    with count_host_syncs() as syncs:
        call()
    assert syncs.total == 0, syncs.events


def test_marks_delimit_regions_and_events_name_their_origin():
    """`mark`/`since` split a run into regions; events from this package say so (`ours`)."""
    from resispec.decoding import trees

    with count_host_syncs() as syncs:
        T.tolist()
        mark = syncs.mark()
        trees.complete(3, 2).ancestor_matrix()  # builds one tensor from a host list
    region = syncs.since(mark)
    assert [e.kind for e in region] == ["host_to_device"]
    assert region[0].ours and region[0].where.startswith("resispec/decoding/trees.py:")
    assert not syncs.events[0].ours
