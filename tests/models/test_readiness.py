"""A model directory counts as ready (READY.json, the source's completion marker) only with its config
and weights; every way of lacking them is named."""

import json

import pytest

from resispec.models.readiness import require_weights, weights_problem
from resispec.models.sources import is_complete, materialize

POINTER = b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n"


def model_dir(tmp_path, files: dict):
    directory = tmp_path / "model"
    directory.mkdir()
    (directory / "config.json").write_text("{}")
    for name, content in files.items():
        if content is None:
            (directory / name).symlink_to(tmp_path / "gone")  # a removed cache blob
        else:
            (directory / name).write_bytes(content)
    return directory


INDEX = json.dumps({"weight_map": {"a": "model-1.safetensors", "b": "model-2.safetensors"}}).encode()
# (files besides config.json, the problem named): each row one unready directory
UNREADY = [
    ({}, "no weights (model.safetensors, pytorch_model.bin, "),
    ({"model.safetensors": b""}, "model.safetensors is empty"),
    ({"pytorch_model.bin": POINTER}, "pytorch_model.bin is a Git LFS pointer, not the weights"),
    ({"model.safetensors": None}, "model.safetensors is missing"),
    (
        {"model.safetensors.index.json": INDEX, "model-1.safetensors": b"w" * 2048},
        "model-2.safetensors is missing",
    ),
    (
        {"pytorch_model.bin.index.json": b'{"weight_map": {}}'},
        "pytorch_model.bin.index.json lists no weight files",
    ),
    ({"tokenizer.json": b"{}"}, "no weights"),
]


@pytest.mark.parametrize(("files", "problem"), UNREADY)
def test_unready_directory_is_named(tmp_path, files, problem):
    directory = model_dir(tmp_path, files)
    with pytest.raises(ValueError) as error:
        require_weights(directory, "model draft")
    assert f"model draft: model directory {directory} is not ready: {problem}" in str(error.value)


def test_no_config_is_named(tmp_path):
    assert weights_problem(tmp_path) == "no config.json"


def test_complete_directories_are_ready(tmp_path):
    files = {
        "model.safetensors.index.json": INDEX,
        "model-1.safetensors": b"w" * 2048,
        "model-2.safetensors": b"w",
    }
    assert weights_problem(model_dir(tmp_path, files)) is None


def test_local_source_without_weights_is_not_marked_complete(tmp_path):
    source = model_dir(tmp_path, {})
    with pytest.raises(ValueError, match=f"model source local:{source}: model directory .* no weights"):
        materialize(f"local:{source}", tmp_path / "dest")
    assert not is_complete(tmp_path / "dest")


def test_ready_file_over_a_directory_without_weights_is_named(tmp_path):
    from resispec.workflow.steps.common import model_dir as ready_dir

    directory = model_dir(tmp_path, {"model.safetensors": b"w" * 2048})
    (directory / "READY.json").write_text("{}")
    assert ready_dir(directory / "READY.json") == directory
    (directory / "model.safetensors").unlink()
    with pytest.raises(ValueError, match=f"READY file {directory / 'READY.json'}: .* no weights"):
        ready_dir(directory / "READY.json")
