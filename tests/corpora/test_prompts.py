"""Prompts: fixed order, truncation to a token length, generation budget, JSONL round trip."""

import json

import pytest

from resispec import corpora as data
from resispec.models.tiny import byte_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    return byte_tokenizer()  # one token per UTF-8 byte: lengths are known without the tokenizer


ROWS = [
    {"id": "a", "text": "The quick brown fox jumps over the lazy dog.", "dataset": "c4"},
    {"id": "b", "text": "short", "dataset": "c4"},
    {"id": "c", "text": "", "dataset": "c4"},
    {"id": "d", "text": "Ünïcödé text", "dataset": "c4"},
]


def test_prompts_are_truncated_in_order(tokenizer):
    prompts = data.build_prompts(ROWS, tokenizer, prompt_tokens=10, max_new_tokens=32)
    assert [p["prompt_id"] for p in prompts] == ["a", "b", "d"]  # the empty document is skipped
    for prompt, row in zip(prompts, [ROWS[0], ROWS[1], ROWS[3]], strict=True):
        assert len(prompt["input_ids"]) == min(10, len(row["text"].encode("utf-8")))
    assert tokenizer.decode(prompts[0]["input_ids"]) == ROWS[0]["text"][:10]  # ASCII: 1 byte = 1 char
    assert tokenizer.decode(prompts[1]["input_ids"]) == "short"
    for prompt in prompts:
        assert prompt["max_new_tokens"] == 32 and prompt["dataset"] == "c4"


def test_dataset_argument_overrides_and_bad_lengths(tokenizer):
    prompts = data.build_prompts(ROWS[:1], tokenizer, prompt_tokens=4, max_new_tokens=8, dataset="x")
    assert prompts[0]["dataset"] == "x"
    with pytest.raises(ValueError, match="prompt_tokens"):
        data.build_prompts(ROWS, tokenizer, prompt_tokens=0, max_new_tokens=8)


def test_write_and_read_prompts(tmp_path, tokenizer):
    prompts = data.build_prompts(ROWS, tokenizer, prompt_tokens=6, max_new_tokens=16)
    path = data.write_prompts(tmp_path / "sub" / "c4.jsonl", prompts)
    lines = path.read_text().splitlines()
    assert len(lines) == len(prompts)
    assert set(json.loads(lines[0])) == {"prompt_id", "dataset", "input_ids", "max_new_tokens"}
    assert data.read_prompts(path) == prompts
