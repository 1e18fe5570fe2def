"""The shared teacher pass: one labelling of a target's chunks, in parts, gives every model trained on it
the labels of its own pass, and so the same weights; labels of other options or chunks are refused."""

import pytest
import torch
from safetensors.torch import load_file

from resispec.models import distill, draft_training, eagle_training, teacher, teacher_parts
from resispec.models.training import TrainOptions

CHUNK = 32  # seq_len of these tests: 10 documents of 300 tokens + EOS give 94 chunks
COMMON = dict(seq_len=CHUNK, batch_size=4, steps=5, amp=False, seed=3, temperatures=(1.0, 0.6))


def _chunks(target, tiny_target, tiny_tokens):
    """The [94, CHUNK] training chunks of the first 10 documents (the rest held out)."""
    chunks, _, _ = distill.training_chunks(
        target,
        tiny_target,
        texts=None,
        token_ids=tiny_tokens[:10],
        heldout=tiny_tokens[10:],
        seq_len=CHUNK,
        caller="test",
    )
    return chunks


def _shared_parts(tiny_target, tiny_tokens, directory, *, jobs=2, features=True, **changes):
    """A shared pass over every chunk (the largest budget), labelled in ``jobs`` parts: their files."""
    from resispec.models.loading import load_model

    opts = TrainOptions(**{**COMMON, "teacher_tokens": 100_000, **changes})
    target = load_model(tiny_target)
    chunks = _chunks(target, tiny_target, tiny_tokens)
    assert chunks.shape[0] == 94
    paths = []
    for index, (first, last) in enumerate(teacher_parts.teacher_parts(chunks.shape[0], jobs)):
        part = teacher.label_part(target, chunks, opts, first, last, features=features)
        paths.append(directory / f"part{index}.pt")
        teacher.save_part(paths[-1], part, teacher.label_options(opts), first)
    return paths


def _weights(path):
    return load_file(path) if path.suffix == ".safetensors" else torch.load(path, weights_only=True)


def test_parts_are_whole_batches_that_cover_every_chunk_once():
    for chunks in (1, 8, 47, 94, 2500):
        for jobs in (1, 2, 3, 7):
            parts = teacher_parts.teacher_parts(chunks, jobs)
            assert parts[0][0] == 0 and parts[-1][1] == chunks and len(parts) <= jobs
            assert all(a[1] == b[0] for a, b in zip(parts, parts[1:], strict=False))
            assert all(first % teacher_parts.TEACHER_BATCH == 0 and first < last for first, last in parts)


def test_a_smaller_budget_labels_a_prefix_of_a_larger_ones_chunks():
    chunks = torch.arange(400).view(100, 4)
    large = distill.teacher_chunks(chunks, 4 * 60, seed=5)
    assert torch.equal(distill.teacher_chunks(chunks, 4 * 25, seed=5), large[:25])
    assert not torch.equal(distill.teacher_chunks(chunks, 4 * 25, seed=6), large[:25])


@pytest.mark.parametrize("kind", ["draft", "eagle"])
def test_the_shared_pass_trains_the_models_own_weights(kind, tiny_target, tiny_tokens, tmp_path):
    """48 chunks (six batches of 8: part 0 of two) from the shared pass over all 94, against the model's
    own pass over its 48: bitwise the same weights."""
    parts = _shared_parts(tiny_target, tiny_tokens, tmp_path)
    budget = dict(COMMON, teacher_tokens=48 * CHUNK, token_ids=tiny_tokens[:10], heldout=tiny_tokens[10:])
    if kind == "draft":
        train = lambda out, **kw: draft_training.train_draft(  # noqa: E731
            tiny_target, out, arch={"init": "random", "layers": 1, "hidden": 32}, **budget, **kw
        )
    else:
        train = lambda out, **kw: eagle_training.train(tiny_target, out, **budget, **kw)  # noqa: E731
    own = train(tmp_path / "own")
    shared = train(tmp_path / "shared", teacher=parts)
    assert own["teacher_pass"] == "own" and shared["teacher_pass"] == "shared"
    assert own["cost"]["teacher_tokens"] == shared["cost"]["teacher_tokens"] == 48 * CHUNK
    files = sorted(p.name for p in (tmp_path / "own").iterdir() if p.suffix in (".safetensors", ".bin"))
    assert files, "no weights saved"
    for name in files:
        mine, theirs = (_weights(tmp_path / side / name) for side in ("own", "shared"))
        assert mine.keys() == theirs.keys()
        for key in mine:
            assert torch.equal(mine[key], theirs[key]), (name, key)
    assert shared["loss_last"] == own["loss_last"]


def test_labels_of_other_options_chunks_or_without_features_are_refused(tiny_target, tiny_tokens, tmp_path):
    from resispec.models.loading import load_model

    parts = _shared_parts(tiny_target, tiny_tokens, tmp_path, jobs=3, features=False)
    shared = teacher.load_parts(parts)
    assert shared[0].tokens.shape[0] == 94 and shared[0].features is None
    target = load_model(tiny_target)
    chunks = _chunks(target, tiny_target, tiny_tokens)
    mine = TrainOptions(**{**COMMON, "teacher_tokens": 20 * CHUNK})
    assert teacher.model_targets(target, chunks, mine, features=False, shared=shared).tokens.shape[0] == 20
    cases = [
        (TrainOptions(**{**COMMON, "teacher_tokens": 640, "temperatures": (1.0,)}), False, "temperatures"),
        (TrainOptions(**{**COMMON, "teacher_tokens": 640, "amp": True}), False, "'amp'"),
        (TrainOptions(**{**COMMON, "teacher_tokens": 640, "seed": 4}), False, "'seed'"),
        (mine, True, "kept no features"),
    ]
    for opts, features, message in cases:
        with pytest.raises(ValueError, match=message):
            teacher.model_targets(target, chunks, opts, features=features, shared=shared)
    other = torch.flip(chunks, dims=[0])  # another corpus: other chunks under the same options
    with pytest.raises(ValueError, match="does not hold this model's 20 chunks"):
        teacher.model_targets(target, other, mine, features=False, shared=shared)
    with pytest.raises(ValueError, match="starts at chunk 32, expected 0"):
        teacher.load_parts(parts[1:])
