"""At most one blocking host-device synchronisation per decoding step (``decoding.host_syncs``).

Every exact method and ``resispec`` is decoded with the model drafter and the EAGLE drafter on a complete
tree (d5b3), a Sequoia DP tree and the EAGLE tree, in both verification modes, with the counter on for
the whole generation. The engine's step function (``_Loop._verify_step``) is wrapped to mark where each
step starts: the events between two marks are one step's (drafting, the target's forward, the walk, the
host copy of the decisions and the commit), this package's and the libraries' (transformers) alike.
The one allowed event is the step's copy of its decisions (``StepDecision.payload.tolist()``).
Exception, by design and on a CPU only: ``optimal`` in the level-by-level walk (``verify_mode="path"``,
the CPU default) plans each node with the per-node planner there (``walk.per_node_optimal``), whose reads
of sizes are reads of host memory that wait for no device; on an accelerator the same walk takes the
batched planner, held here to one sync per step by running that branch on the CPU.
"""

from __future__ import annotations

import pytest
import torch

from resispec.decoding import engine, tree_specs, trees, walk
from resispec.decoding.drafters import EagleDrafter
from resispec.decoding.host_syncs import count_host_syncs
from resispec.decoding.tree_search import sequoia
from resispec.models.eagle_head import new_eagle_head

PROMPT = torch.tensor([1, 5, 3, 7])
METHODS = ("specinfer", "sequoia", "resispec", "ers", "deterministic", "optimal")
TREES = {
    "d5b3": lambda: trees.complete(5, 3),
    "sequoia": lambda: sequoia([0.6, 0.25, 0.1], 16, 4),
    "eagle": lambda: tree_specs.resolve("eagle"),
}


@pytest.fixture(scope="module")
def eagle_head(target_model):
    return new_eagle_head(target_model, torch.Generator().manual_seed(3)).eval()


def per_step_events(monkeypatch, target_model, drafter, method, tree, verify_mode, audit_top=None):
    """Host-sync events of each complete step (the last one, which also holds generate's end, dropped)."""
    marks = []
    original = engine._Loop._verify_step

    def marked(self, length):
        marks.append(counter.mark())
        return original(self, length)

    monkeypatch.setattr(engine._Loop, "_verify_step", marked)
    with count_host_syncs() as counter:
        engine.generate(
            target_model,
            drafter,
            PROMPT,
            method=method,
            tree=tree,
            max_new_tokens=24,
            eos_token_id=[],
            generator=torch.Generator().manual_seed(0),
            verify_mode=verify_mode,
            audit_top=audit_top,
        )
    assert len(marks) >= 3, "too few steps to count"
    return [counter.events[a:b] for a, b in zip(marks[:-1], marks[1:], strict=True)]


@pytest.mark.parametrize("verify_mode", ["tree", "path"])
@pytest.mark.parametrize("tree", list(TREES))
@pytest.mark.parametrize("drafter", ["model", "eagle"])
@pytest.mark.parametrize("method", METHODS)
def test_one_host_sync_per_step(
    monkeypatch, target_model, draft_model, eagle_head, method, drafter, tree, verify_mode
):
    draft = draft_model if drafter == "model" else EagleDrafter(eagle_head)
    if method == "optimal" and verify_mode == "path":  # the CPU's per-node plans (module docstring)
        steps = per_step_events(monkeypatch, target_model, draft, method, TREES[tree](), verify_mode)
        # the planner's reads and the walk's early stop, beside the step's one copy of its decisions
        allowed = (
            "resispec/verify/optimal/",
            "resispec/decoding/walk.py",
        )
        extra = [e.where for s in steps for e in s if not e.where.startswith("resispec/decoding/engine.py")]
        assert extra and all(where.startswith(allowed) for where in extra), extra
        monkeypatch.setattr(walk, "per_node_optimal", lambda device: False)  # the accelerator's branch
    steps = per_step_events(monkeypatch, target_model, draft, method, TREES[tree](), verify_mode)
    counts = [len(events) for events in steps]
    worst = max(range(len(steps)), key=lambda i: counts[i])
    assert max(counts) == 1, [f"{e.where}: {e.kind}" for e in steps[worst]]
    assert all(
        e.kind == "tolist" and e.where.startswith("resispec/decoding/engine.py") for s in steps for e in s
    )


@pytest.mark.parametrize("verify_mode", ["tree", "path"])
def test_audit_logging_adds_no_host_sync_to_a_step(monkeypatch, target_model, draft_model, verify_mode):
    """With the audit's logging on (``audit_top``), a step still makes only its one copy of its decisions:
    it keeps copies of the visited nodes' rows, and their entries are built after the generation
    (``walk.finish_audit``)."""
    tree, method = TREES["d5b3"](), "specinfer"
    steps = per_step_events(monkeypatch, target_model, draft_model, method, tree, verify_mode, audit_top=4)
    assert [len(events) for events in steps] == [1] * len(steps), [[e.where for e in s] for s in steps]


def test_audit_entries_are_built_after_the_generation_is_timed(monkeypatch, target_model, draft_model):
    """Every audit entry (its top-k, host lists) is built after ``wall_s`` is measured, when the step
    times are filled in: the timing of a generation with the audit's logging on leaves them out."""
    events = []
    entry, fill_times = walk.audit_entry, engine._Loop.fill_times
    monkeypatch.setattr(walk, "audit_entry", lambda *a, **k: events.append("entry") or entry(*a, **k))
    monkeypatch.setattr(
        engine._Loop, "fill_times", lambda self, steps: events.append("timed") or fill_times(self, steps)
    )
    out = engine.generate(
        target_model,
        draft_model,
        PROMPT,
        tree=TREES["d5b3"](),
        max_new_tokens=12,
        eos_token_id=[],
        generator=torch.Generator().manual_seed(0),
        audit_top=4,
    )
    entries = sum(len(step.audit) for step in out.steps)
    assert entries >= len(out.steps) > 0 and events == ["timed"] + ["entry"] * entries
    assert all(isinstance(e, dict) and e["candidates"] is not None for s in out.steps for e in s.audit)
