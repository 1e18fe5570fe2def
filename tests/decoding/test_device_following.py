"""Every tensor the engine and the verifiers create follows the model's device.

No GPU here, so the test audits instead: a TorchFunctionMode sees every torch call of a full decoding
run (each verifier, the model and EAGLE drafters, the session's prompt tensor, Sequoia's acceptance
measurement) and records each tensor created by a factory function (`torch.tensor`, `arange`, `zeros`,
...) without a `device=`, each `torch.Generator` without a device, and each `.cpu()` / `.numpy()` call,
when the caller is code under `resispec/decoding/` or `resispec/verify/`. On a CPU-only machine such a
tensor is silently right; on a GPU it lands on the CPU (a crash when mixed with CUDA tensors, a host
copy per step at best). Hugging Face's own internals are not audited (their frames are not ours).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch.overrides import TorchFunctionMode

AUDITED = ("resispec/decoding/", "resispec/verify/")
FACTORIES = {
    torch.tensor,
    torch.as_tensor,
    torch.arange,
    torch.zeros,
    torch.ones,
    torch.empty,
    torch.full,
    torch.rand,
    torch.randn,
    torch.randint,
    torch.randperm,
    torch.eye,
    torch.linspace,
}
HOST_CALLS = {torch.Tensor.cpu, torch.Tensor.numpy}
# Deliberate host work, by (file, function): each moves a handful of numbers and is correct on any device.
ALLOWED = {
    # ers plans a node on <= `bins` ratio bins in numpy, then moves the plan back to the node's device
    ("resispec/verify/sequential.py", "future_for"),
    # the audit pass (never timed) keeps sampled full-vocabulary rows, compressed on the host
    ("resispec/decoding/audit_sampling.py", "encode"),
}


def _caller() -> tuple[str, str, int] | None:
    """(file relative to src, function, line) of the innermost non-torch frame, if it is audited code."""
    frame = sys._getframe(2)
    while frame is not None and (
        "/torch/" in frame.f_code.co_filename or frame.f_code.co_filename == __file__
    ):
        frame = frame.f_back
    if frame is None:
        return None
    path = Path(frame.f_code.co_filename).as_posix()
    for prefix in AUDITED:
        if prefix in path:
            relative = "resispec/" + path.split("/resispec/", 1)[1]
            return relative, frame.f_code.co_name, frame.f_lineno
    return None


class DeviceAudit(TorchFunctionMode):
    """Records audited tensor creations without a device and host transfers."""

    def __init__(self) -> None:
        super().__init__()
        self.violations: set[str] = set()

    def _record(self, what: str) -> None:
        where = _caller()
        if where and where[:2] not in ALLOWED:
            self.violations.add(f"{where[0]}:{where[2]} ({where[1]}): {what}")

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in FACTORIES and kwargs.get("device") is None:
            self._record(f"torch.{func.__name__} without device=")
        elif func in HOST_CALLS:
            self._record(f"Tensor.{func.__name__}()")
        return func(*args, **kwargs)


@pytest.fixture
def audit(monkeypatch):
    """The audit mode, plus a torch.Generator wrapper that records generators created without a device."""
    real_generator = torch.Generator
    mode = DeviceAudit()

    def generator(device=None):
        if device is None:
            mode._record("torch.Generator without device")
        return real_generator() if device is None else real_generator(device=device)

    monkeypatch.setattr(torch, "Generator", generator)
    return mode, real_generator


def _methods():
    from resispec.verify import METHODS

    return [m for m in METHODS if m != "greedy"]  # greedy runs at temperature 0 below


def test_engine_and_verifiers_create_tensors_on_the_models_device(audit, target_model, draft_model):
    from resispec.decoding.engine import generate

    mode, real_generator = audit
    prompt = torch.tensor([1, 2, 3, 4, 5], dtype=torch.long)
    with mode:
        for method in _methods():
            generate(
                target_model,
                draft_model,
                prompt,
                method=method,
                tree="d3b2",
                temperature=1.0,
                max_new_tokens=6,
                generator=real_generator().manual_seed(0),
                audit_top=4,
                eos_token_id=[],
            )
        generate(target_model, draft_model, prompt, tree="d3b2", temperature=0.0, max_new_tokens=4)
    assert not mode.violations, "\n".join(sorted(mode.violations))


def test_eagle_drafter_and_sequoia_profile_follow_the_device(audit, target_model, draft_model):
    from resispec.decoding.drafters.eagle import EagleDrafter
    from resispec.decoding.engine import generate
    from resispec.decoding.profile import position_acceptance
    from resispec.models.eagle_head import new_eagle_head

    mode, real_generator = audit
    head = new_eagle_head(target_model, real_generator().manual_seed(1)).eval()
    prompt = torch.tensor([1, 2, 3, 4, 5], dtype=torch.long)
    with mode:
        generate(target_model, EagleDrafter(head), prompt, method="sequoia", tree="d3b2", max_new_tokens=6)
        position_acceptance(target_model, draft_model, [prompt], k=3)
    assert not mode.violations, "\n".join(sorted(mode.violations))


def test_session_builds_the_prompt_on_the_device(audit, target_model, draft_model):
    from resispec.decoding.audit_sampling import AuditPlan
    from resispec.decoding.session import DecodeSession
    from resispec.decoding.trees import parse

    mode, _ = audit
    job = {"dataset": "c4", "tree": "d2b2", "temperature": 1.0, "target": "t", "draft": "d"}
    session = DecodeSession(
        job, {"device": "cpu", "audit": {"top_tokens": 4}}, target_model, draft_model, parse("d2b2")
    )
    prompt = {"prompt_id": "p0", "input_ids": [1, 2, 3], "max_new_tokens": 3}
    with mode:
        records = [session.timing_prompt(m, prompt, seed=0)[0] for m in ("specinfer", "autoregressive")]
        audited, nodes = session.timing_prompt("specinfer", prompt, 0, AuditPlan(nodes=2, full_rows=1))
    assert [len(r["new_tokens"]) for r in [*records, audited]] == [3, 3, 3] and nodes
    assert not mode.violations, "\n".join(sorted(mode.violations))


def test_the_audit_catches_a_tensor_without_device(audit):
    """The audit is not vacuous: a factory call from audited code without a device is reported."""
    from resispec.decoding import kv_cache

    mode, _ = audit
    with mode:
        namespace = {"torch": torch, "__name__": kv_cache.__name__}
        exec(compile("def make():\n    return torch.zeros(3)\n", kv_cache.__file__, "exec"), namespace)
        namespace["make"]()
    assert any("torch.zeros without device=" in v for v in mode.violations)
