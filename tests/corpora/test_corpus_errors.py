"""A bad corpus file stops the run where it is read, with an error naming the file (and the line): a
truncated or corrupt gzip, bad UTF-8, bad JSON, a line that is no JSON object, a document without id
or text, a repeated id, an empty corpus, and fewer documents than asked unless that is allowed."""

import gzip
import json

import pytest

from resispec import corpora

GOOD = [{"id": "a", "text": "first document"}, {"id": "b", "text": "second document"}]


def lines(*rows) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode()


def gz(data: bytes) -> bytes:
    """Gzip with a fixed header time, so that every pytest-xdist worker collects the same test ids."""
    return gzip.compress(data, mtime=0)


def truncated_gzip() -> bytes:
    whole = gz(lines(*GOOD * 50))
    return whole[: len(whole) // 2]


# (file name, file bytes, documents asked, text the message must hold after the file's path)
BAD_CORPORA = [
    ("c4.jsonl.gz", truncated_gzip(), 100, ": truncated or corrupt after line "),
    ("c4.jsonl.gz", lines(*GOOD), 2, ": truncated or corrupt after line 0 (Not a gzipped file"),
    ("c4.jsonl", lines(GOOD[0], '{"id": "b", "text": '), 2, ":2: not valid JSON"),
    ("c4.jsonl", lines("[1, 2]"), 1, ":1: not a JSON object (a list)"),
    ("c4.jsonl", lines(GOOD[0], '"just text"'), 2, ":2: not a JSON object (a str)"),
    ("c4.jsonl", lines("3"), 1, ":1: not a JSON object (a int)"),
    ("c4.jsonl", lines("null"), 1, ":1: not a JSON object (a NoneType)"),
    ("c4.jsonl", b'{"id": "a", "text": "caf\xe9"}\n', 1, ":1: not UTF-8 text"),
    ("c4.jsonl", lines({"id": "a", "body": "x"}), 1, ":1: lacks the key 'text'"),
    ("c4.jsonl", lines(GOOD[0], {"text": "no id"}), 2, ":2: lacks the key 'id'"),
    ("c4.jsonl", lines({"id": "a", "text": ""}), 1, ":1: 'text' must be a non-empty string, got ''"),
    ("c4.jsonl", lines({"id": "a", "text": "   "}), 1, ":1: 'text' must be a non-empty string"),
    ("c4.jsonl", lines({"id": "a", "text": 12}), 1, ":1: 'text' must be a non-empty string, got 12"),
    ("c4.jsonl", lines({"id": None, "text": "x"}), 1, ":1: 'id' must be a non-empty string or number"),
    ("c4.jsonl", lines({"id": ["a"], "text": "x"}), 1, ":1: 'id' must be a non-empty string or number"),
    ("c4.jsonl", lines(GOOD[0], GOOD[0]), 2, ":2: id 'a' repeats line 1's"),
    ("c4.jsonl", b"", 2, " holds no documents"),
    ("c4.jsonl", b"\n  \n", 2, " holds no documents"),
    ("c4.jsonl.gz", gz(b""), 2, " holds no documents"),
    ("c4.jsonl", lines(GOOD[0]), 2, " holds 1 documents, fewer than the 2 prompts asked (data.num_prompts)"),
    ("c4.jsonl.gz", gz(lines(*GOOD)), 5, " holds 2 documents, fewer than the 5 prompts asked"),
]


@pytest.mark.parametrize(("name", "content", "asked", "message"), BAD_CORPORA)
def test_bad_corpus_names_file_and_line(tmp_path, name, content, asked, message):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(ValueError) as error:
        corpora.load_corpus("c4", asked, data_dir=tmp_path, allow_fewer=False)
    assert f"{tmp_path / name}{message}" in str(error.value), str(error.value)


def test_fewer_documents_are_taken_when_allowed(tmp_path, caplog):
    (tmp_path / "c4.jsonl").write_bytes(lines(GOOD[0]))
    rows = corpora.load_corpus("c4", 2, data_dir=tmp_path, allow_fewer=True)
    assert [r["id"] for r in rows] == ["a"]
    assert f"only 1 of the 2 requested documents exist in {tmp_path / 'c4.jsonl'}" in caplog.text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (lines({"prompt_id": "a", "input_ids": [1]}, "[3]"), ":2: not a JSON object (a list)"),
        (lines({"prompt_id": "a", "input_ids": [1]}, '{"prompt_id": '), ":2: not valid JSON"),
    ],
)
def test_bad_prompts_file_names_file_and_line(tmp_path, content, message):
    path = tmp_path / "prompts.jsonl"
    path.write_bytes(content)
    with pytest.raises(ValueError) as error:
        corpora.read_prompts(path)
    assert f"{path}{message}" in str(error.value)


def test_missing_prompts_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="absent.jsonl: no such file"):
        corpora.read_prompts(tmp_path / "absent.jsonl")


def test_single_prompt_interval_is_inconclusive():
    """A run on a one-document corpus (allowed) has zero-width bootstrap intervals: no verdict."""
    from resispec.report.verdicts import verdict

    cell = {"metric": "accepted_length", "value": 3.0}
    assert verdict(cell, {"ours": 2.0, "ours_low": 2.0, "ours_high": 2.0, "n": 1}) == "inconclusive"
    assert verdict(cell, {"ours": 2.0, "ours_low": 1.9, "ours_high": 2.1, "n": 40}) == "disagrees"
