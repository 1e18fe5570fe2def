"""A decoding run's session: trees that need measured acceptance come from the pair profile (hub drafts
such as JackFram/llama-68m have no training report), else from a trained draft's READY.json."""

from __future__ import annotations

import json

import pytest

from resispec.decoding.costs import CostProfile
from resispec.decoding.profile import PairProfile
from resispec.decoding.session import DecodeSession
from resispec.models import tiny

SETTINGS = {"device": "cpu", "dtype": "float32"}


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("pair")
    target = tiny.build("layers=2,hidden=32,seed=3", root / "target")
    draft = tiny.build("layers=1,hidden=16,seed=4", root / "draft")
    (target / "READY.json").write_text(json.dumps({"kind": "source", "source": "tiny:seed=3"}))
    return target, draft


def _job(tree: str) -> dict:
    return {"tree": tree, "target": "t", "draft": "d", "temperature": 1.0, "dataset": "c4"}


def _profile(path) -> str:
    costs = CostProfile([1, 64], [1.0, 1.1], [0.0, 0.01, 0.0, 0.0], {})
    acceptance = {"1": {"sequoia": [0.6, 0.2, 0.1], "specinfer": [0.5, 0.1, 0.05]}}
    path.write_text(PairProfile(acceptance, costs, {"max_nodes": 32, "max_depth": 6}).to_json())
    return path


def test_sequoia_tree_of_a_hub_draft_comes_from_the_pair_profile(pair, tmp_path):
    """Regression: a hub draft's READY.json has no acceptance vector; the paper's `sequoia128x8` runs
    stopped with 'needs the draft's measured acceptance vector'. The pair profile supplies it."""
    target, draft = pair
    (draft / "READY.json").write_text(json.dumps({"kind": "source", "source": "hf:JackFram/llama-68m"}))
    with pytest.raises(ValueError, match="sequoia16x4"):
        DecodeSession.open(_job("sequoia16x4"), SETTINGS, target, draft)
    session = DecodeSession.open(_job("sequoia16x4"), SETTINGS, target, draft, _profile(tmp_path / "p.json"))
    assert session.tree.num_nodes == 16 and session.tree.depth <= 4
    auto = DecodeSession.open(_job("auto"), SETTINGS, target, draft, tmp_path / "p.json")
    assert auto.tree.num_nodes <= 32 and auto.tree.depth <= 6


def test_a_draft_trained_on_this_target_keeps_its_vector_without_a_profile(pair):
    target, draft = pair
    ready = {"kind": "draft", "teacher": "t", "position_acceptance": [0.9, 0.5, 0.2, 0.1]}
    (draft / "READY.json").write_text(json.dumps(ready))
    session = DecodeSession.open(_job("sequoia8x3"), SETTINGS, target, draft)
    assert session.tree.num_nodes == 8


@pytest.mark.parametrize("native, dtype", [(True, "bfloat16"), (False, "float32")])
def test_dtype_auto_decodes_in_what_the_cpu_has_and_the_record_says_it(pair, monkeypatch, native, dtype):
    """Config ``dtype: auto`` on a CPU faked with and without native bfloat16: both models load in that
    dtype, every method of a run decodes its budget in it (the verifier's rows stay float32), and the raw
    record names the dtype that ran."""
    import torch

    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: native)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    target, draft = pair
    (draft / "READY.json").write_text(json.dumps({"kind": "draft", "position_acceptance": [0.5, 0.2]}))
    session = DecodeSession.open(_job("d2b2"), {**SETTINGS, "dtype": "auto"}, target, draft)
    assert str(session.target_model.dtype) == f"torch.{dtype}" == str(session.draft.model.dtype)
    prompt = {"prompt_id": "p0", "input_ids": [5, 17, 3, 9, 21, 4], "max_new_tokens": 6}
    session.prepare([prompt])
    for method in ("specinfer", "ers", "optimal", "resispec"):
        record, _ = session.timing_prompt(method, prompt, seed=1)
        assert record["dtype"] == dtype and len(record["new_tokens"]) == 6, method
