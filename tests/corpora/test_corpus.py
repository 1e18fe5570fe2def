"""Corpora from a local directory (the shared samples) and from the hub (a fake `load_dataset`)."""

import gzip
import json
import logging
import os
from pathlib import Path

import pytest

from resispec import corpora as data

SHARED = Path(os.environ.get("RESISPEC_DATA_DIR") or Path(__file__).resolve().parents[3] / "shared" / "data")
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="shared corpus samples not present")


def _first_ids(path: Path, n: int) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line)["id"] for _, line in zip(range(n), handle, strict=False)]


@needs_shared
@pytest.mark.parametrize("name", ["cnn_dailymail", "openwebtext", "c4"])
def test_local_corpus_from_env_keeps_file_order(name, monkeypatch):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(SHARED))
    rows = data.load_corpus(name, 7)
    assert [r["id"] for r in rows] == _first_ids(SHARED / f"{name}.jsonl.gz", 7)
    assert all(r["text"] and r["dataset"] == name for r in rows)


@needs_shared
def test_alias_and_argument_override_env(monkeypatch, tmp_path):
    monkeypatch.setenv(data.DATA_DIR_ENV, str(tmp_path))  # empty: the argument must win
    rows = data.load_corpus("cnn_dm", 3, data_dir=SHARED)
    assert [r["dataset"] for r in rows] == ["cnn_dailymail"] * 3


def test_plain_jsonl_and_short_corpus_warns(tmp_path, caplog):
    lines = [{"id": f"d{i}", "text": f"text {i}"} for i in range(3)]
    (tmp_path / "c4.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    with caplog.at_level(logging.WARNING, logger="resispec.data"):
        rows = data.load_corpus("c4", 10, data_dir=tmp_path)
    assert [r["id"] for r in rows] == ["d0", "d1", "d2"]
    assert "only 3 of the 10" in caplog.text


def test_missing_local_file_names_dataset_and_both_fixes(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        data.load_corpus("openwebtext", 5, data_dir=tmp_path)
    message = str(info.value)
    assert "openwebtext" in message and data.DATA_DIR_ENV in message and "network" in message


def test_rows_without_text_are_rejected(tmp_path):
    (tmp_path / "c4.jsonl").write_text(json.dumps({"id": "x", "body": "no text"}) + "\n")
    with pytest.raises(ValueError, match="'text'"):
        data.load_corpus("c4", 1, data_dir=tmp_path)


def test_unknown_name_and_source_are_errors(tmp_path):
    with pytest.raises(ValueError, match="wikitext"):
        data.load_corpus("wikitext", 1, data_dir=tmp_path)
    with pytest.raises(ValueError, match="source"):
        data.load_corpus("c4", 1, data_dir=tmp_path, source="ftp")


class FakeHub:
    """Records `load_dataset` calls and yields numbered rows, counting how many were read."""

    def __init__(self, field: str, with_id: bool) -> None:
        self.calls, self.read, self.field, self.with_id = [], 0, field, with_id

    def __call__(self, repo, config=None, *, split, streaming):
        self.calls.append((repo, config, split, streaming))
        return self._rows()

    def _rows(self):
        for i in range(1000):
            self.read += 1
            row = {self.field: f"document {i}"}
            if self.with_id:
                row["id"] = f"hash{i}"
            yield row


@pytest.mark.parametrize(
    ("name", "repo", "config", "split", "field", "with_id"),
    [
        ("cnn_dailymail", "abisee/cnn_dailymail", "3.0.0", "test", "article", True),
        ("openwebtext", "Skylion007/openwebtext", None, "train", "text", False),
        ("c4", "allenai/c4", "en", "validation", "text", False),
    ],
)
def test_hub_streams_first_rows(monkeypatch, name, repo, config, split, field, with_id):
    import datasets

    fake = FakeHub(field, with_id)
    monkeypatch.delenv(data.DATA_DIR_ENV, raising=False)
    monkeypatch.setattr(datasets, "load_dataset", fake)
    rows = data.load_corpus(name, 4)
    assert fake.calls == [(repo, config, split, True)]
    assert fake.read == 4  # streamed: nothing beyond the first n rows is read
    assert [r["text"] for r in rows] == [f"document {i}" for i in range(4)]
    assert rows[2]["id"] == ("hash2" if with_id else f"{name}-0000002")


def test_unreachable_hub_names_dataset_and_both_fixes(monkeypatch):
    import datasets

    def offline(*args, **kwargs):
        raise ConnectionError("no route to huggingface.co")

    monkeypatch.delenv(data.DATA_DIR_ENV, raising=False)
    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(RuntimeError) as info:
        data.load_corpus("c4", 2)
    message = str(info.value)
    assert "c4" in message and data.DATA_DIR_ENV in message and "network" in message
    assert "allenai/c4" in message


def test_local_source_without_directory_is_an_error(monkeypatch):
    monkeypatch.delenv(data.DATA_DIR_ENV, raising=False)
    with pytest.raises(ValueError, match=data.DATA_DIR_ENV):
        data.load_corpus("c4", 2, source="local")
