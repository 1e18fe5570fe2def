"""Rehearsal stand-ins in a real Hugging Face cache: published keys and files, loaded offline through
the package's own `hf:` path (`snapshot_download` without network, then `from_pretrained`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from resispec.models import hub_cache, published, stand_ins

REPOS = {  # one of each kind: sharded fp16 safetensors, SentencePiece-only sharded .bin, GQA, EAGLE-1 head
    "llama-2-7b-chat": {"source": "hf:meta-llama/Llama-2-7b-chat-hf"},
    "vicuna-7b": {"source": "hf:lmsys/vicuna-7b-v1.3"},
    "tinyllama-1.1b": {"source": "hf:TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T"},
    "eagle": {"source": "hf:yuhuili/EAGLE-llama2-chat-7B", "head_of": "llama-2-7b-chat"},
}
# EAGLE-1's head, SafeAILab/EAGLE model/cnets.py (class Model): no input_layernorm in layer 0, no LM head.
EAGLE_KEYS = {
    "embed_tokens.weight",
    "fc.weight",
    "fc.bias",
    "layers.0.post_attention_layernorm.weight",
    *(f"layers.0.self_attn.{p}_proj.weight" for p in "qkvo"),
    *(f"layers.0.mlp.{p}_proj.weight" for p in ("gate", "up", "down")),
}


@pytest.fixture(scope="module")
def hf_home(tmp_path_factory):
    from resispec.workflow.steps.rehearsal_cache import corpus_texts

    if not os.environ.get("RESISPEC_DATA_DIR"):
        pytest.skip("needs the offline corpus samples (RESISPEC_DATA_DIR)")
    home = tmp_path_factory.mktemp("hf-home")
    texts = corpus_texts({"datasets": ["cnn_dailymail", "openwebtext", "c4"]})
    cache = tmp_path_factory.mktemp("resispec-cache")
    stand_ins.build_rehearsal_cache(REPOS, home / "hub", texts, cache_dir=cache)
    return home


def test_cache_has_the_hub_layout(hf_home):
    folder = hub_cache.repo_folder(hf_home / "hub", "lmsys/vicuna-7b-v1.3")
    commit = (folder / "refs" / "main").read_text()
    assert len(commit) == 40 and not commit.endswith("\n")
    snapshot = folder / "snapshots" / commit
    names = sorted(p.name for p in snapshot.iterdir())
    assert "tokenizer.json" not in names and "tokenizer.model" in names
    assert {"pytorch_model-00001-of-00002.bin", "pytorch_model.bin.index.json"} <= set(names)
    for path in snapshot.iterdir():
        assert path.is_symlink() and not os.path.isabs(os.readlink(path)) and path.resolve().is_file()
    tree = json.loads((folder / "trees" / f"{commit}.json").read_text())
    assert sorted(tree["files"]) == names and tree["format_version"] == 1
    tinyllama = hub_cache.repo_folder(hf_home / "hub", "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T")
    assert (tinyllama / "refs" / "main").read_text() == "036fa4651240b9a1487f709833b9e4b96b4c1574"


def test_stand_in_configs_keep_the_published_keys(hf_home):
    for repo in stand_ins.hub_repositories(REPOS):
        facts = published.published(repo)
        folder = hub_cache.repo_folder(hf_home / "hub", repo)
        config = json.loads(next((folder / "snapshots").iterdir()).joinpath("config.json").read_text())
        changed = {k for k in facts.config if config.get(k) != facts.config[k]}
        assert changed <= set(stand_ins.STAND_IN_SHAPE) | {"num_key_value_heads", "num_hidden_layers"}, repo
        assert config["hidden_size"] == stand_ins.STAND_IN_SHAPE["hidden_size"]
        ratio = facts.config["num_attention_heads"] // facts.config.get("num_key_value_heads", 1)
        assert config["num_attention_heads"] // config["num_key_value_heads"] == ratio, repo


def test_eagle_stand_in_has_the_published_head_keys(hf_home):
    folder = hub_cache.repo_folder(hf_home / "hub", "yuhuili/EAGLE-llama2-chat-7B")
    snapshot = next((folder / "snapshots").iterdir())
    assert sorted(p.name for p in snapshot.iterdir()) == ["config.json", "pytorch_model.bin"]
    state = torch.load(snapshot / "pytorch_model.bin", map_location="cpu", weights_only=True)
    assert set(state) == EAGLE_KEYS
    assert all(t.dtype == torch.float32 for t in state.values())
    assert state["embed_tokens.weight"].shape == (32000, stand_ins.STAND_IN_SHAPE["hidden_size"])


LOAD_OFFLINE = textwrap.dedent(
    """
    import json, sys
    from resispec.models import loading, sources
    from resispec.models.eagle_head import is_eagle_checkpoint, load_eagle_head
    out, report = sys.argv[1], {}
    for name, source in [("chat", "hf:meta-llama/Llama-2-7b-chat-hf"), ("vicuna", "hf:lmsys/vicuna-7b-v1.3"),
                         ("tiny", "hf:TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T")]:
        path = sources.materialize(source, f"{out}/{name}")
        model, tok = loading.load_model(path, dtype="float16"), loading.load_tokenizer(path)
        ids = tok("The cat sat on the mat.")["input_ids"]
        report[name] = {"class": type(model).__name__, "vocab": len(tok), "first": ids[0],
                        "eos": model.generation_config.eos_token_id, "dtype": str(model.dtype),
                        "roundtrip": tok.decode(ids, skip_special_tokens=True)}
    head_dir = sources.materialize("hf:yuhuili/EAGLE-llama2-chat-7B", f"{out}/eagle")
    head = load_eagle_head(head_dir, loading.load_model(f"{out}/chat", dtype="float16"))
    report["eagle"] = {"is_head": is_eagle_checkpoint(head_dir), "dtype": str(next(head.parameters()).dtype)}
    print(json.dumps(report))
    """
)


def test_stand_ins_load_offline_through_the_hf_source_path(hf_home, tmp_path):
    """The regression test of the offline `hf:` path: with `local_dir=`, snapshot_download ignored a
    filled cache under HF_HUB_OFFLINE=1 and every paper model failed to materialize."""
    env = {**os.environ, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1"}
    env.pop("HF_HUB_CACHE", None)
    result = subprocess.run(
        [sys.executable, "-c", LOAD_OFFLINE, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    for name in ("chat", "vicuna", "tiny"):
        assert report[name]["class"] == "LlamaForCausalLM" and report[name]["vocab"] == 32000, report[name]
        assert report[name]["first"] == 1 and report[name]["eos"] == 2  # Llama's <s> is prepended, </s> ends
        assert report[name]["dtype"] == "torch.float16"
        assert report[name]["roundtrip"] == "The cat sat on the mat."
    assert report["eagle"] == {"is_head": True, "dtype": "torch.float16"}


def test_unknown_repository_is_named():
    with pytest.raises(ValueError, match="'someone/unknown'.*published_models.yaml"):
        published.published("someone/unknown")
