"""The teacher pass, shared: the target labels its training chunks once for every model trained on it.

Every draft and EAGLE head trained on a target labels a prefix of the same chunk order
(`distill.teacher_chunks`: the order comes from the training seed alone, the budget takes its first
``teacher_tokens // seq_len`` chunks). So the workflow labels the largest budget once, in parts of
contiguous chunks that run side by side (each a multiple of ``TEACHER_BATCH`` chunks from the start, so
every chunk is labelled in the same batch as in a model's own pass), and each model reads the prefix it
needs (``model_targets``). A model's own pass and the shared one give the same targets for the same
options and chunks; ``model_targets`` checks that the shared labels are of this model's chunks and
options, and says which differ.

The labels depend on the target, the chunks (corpus, ``seq_len``, seed) and ``LABEL_OPTIONS``; features
(the target's last hidden states, for EAGLE heads) are kept when any model of the pass needs them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from resispec.models.distill import TeacherTargets, teacher_chunks, teacher_topk
from resispec.models.teacher_parts import TEACHER_BATCH
from resispec.models.training import TrainOptions

# The options the labels depend on, besides the target and the chunks: as a model's report states them.
LABEL_OPTIONS = ("seed", "device", "threads", "seq_len", "top_k", "temperatures", "amp")


def label_options(opts: TrainOptions) -> dict:
    """The options of ``opts`` the teacher's labels depend on (``amp`` as it runs on this machine)."""
    report = opts.report()
    return {key: report[key] for key in LABEL_OPTIONS}


def own_targets(target, chunks: torch.Tensor, opts: TrainOptions, *, features: bool) -> TeacherTargets:
    """A model's own teacher pass: the target's labels of its chunks (``teacher_chunks``)."""
    return teacher_topk(
        target,
        teacher_chunks(chunks, opts.teacher_tokens, opts.seed),
        top_k=opts.top_k,
        temperatures=opts.temperatures,
        amp=opts.use_amp,
        with_features=features,
    )


def label_part(target, chunks: torch.Tensor, opts: TrainOptions, first: int, last: int, *, features: bool):
    """Chunks ``first:last`` of the teacher's order for the budget ``opts.teacher_tokens``, labelled: one
    part of a shared pass (None when the corpus has no chunk there)."""
    if first % TEACHER_BATCH:
        raise ValueError(f"a teacher part starts at chunk {first}, not a multiple of {TEACHER_BATCH}")
    selected = teacher_chunks(chunks, opts.teacher_tokens, opts.seed)[first:last]
    if selected.shape[0] == 0:
        return None
    return teacher_topk(
        target,
        selected,
        top_k=opts.top_k,
        temperatures=opts.temperatures,
        amp=opts.use_amp,
        with_features=features,
    )


def save_part(path: str | Path, part: TeacherTargets | None, options: dict, first: int) -> None:
    """Write one part of a shared pass (its chunks' labels, or none) with the options it was labelled with."""
    payload = {"options": options, "first": first, "targets": None}
    if part is not None:
        payload["targets"] = {
            "tokens": part.tokens,
            "indices": part.indices,
            "probs": {str(t): p for t, p in part.probs.items()},
            "features": part.features,
        }
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    tmp.replace(path)


def load_parts(paths: Sequence[str | Path]) -> tuple[TeacherTargets, dict]:
    """The labels of a shared pass's parts, in chunk order, and the options they were labelled with
    (ValueError naming the file when the parts disagree or leave a gap)."""
    loaded = [(torch.load(path, weights_only=True), path) for path in paths]
    payloads = sorted(loaded, key=lambda item: item[0]["first"])
    parts, options, expected = [], None, 0
    for payload, path in payloads:
        if options is not None and payload["options"] != options:
            raise ValueError(
                f"teacher part {path}: labelled with {payload['options']}, the others with {options}"
            )
        if payload["first"] != expected:
            raise ValueError(f"teacher part {path} starts at chunk {payload['first']}, expected {expected}")
        options, stored = payload["options"], payload["targets"]
        if stored is None:
            break  # the corpus ended before this part
        part = TeacherTargets(
            tokens=stored["tokens"],
            indices=stored["indices"],
            probs={float(t): p for t, p in stored["probs"].items()},
            features=stored["features"],
        )
        parts.append(part)
        expected += part.tokens.shape[0]
    if not parts:
        raise ValueError(f"teacher parts {[str(p) for p in paths]}: no labelled chunk")
    return TeacherTargets.concatenate(parts), options


def model_targets(
    target, chunks: torch.Tensor, opts: TrainOptions, *, features: bool, shared=None
) -> TeacherTargets:
    """The teacher's labels of a model's chunks: its prefix of a shared pass (``shared``: the
    (targets, options) of ``load_parts``), else the model's own pass. A shared pass labelled with other
    options, chunks or without the features the model needs is a ValueError naming what differs."""
    if shared is None:
        return own_targets(target, chunks, opts, features=features)
    labels, options = shared
    mine = label_options(opts)
    differ = {key: (options.get(key), value) for key, value in mine.items() if options.get(key) != value}
    if differ:
        raise ValueError(
            f"the shared teacher pass was labelled with other options (shared, this model): {differ}"
        )
    selected = teacher_chunks(chunks, opts.teacher_tokens, opts.seed)
    rows = selected.shape[0]
    if labels.tokens.shape[0] < rows or not torch.equal(labels.tokens[:rows], selected):
        raise ValueError(
            f"the shared teacher pass does not hold this model's {rows} chunks (another corpus, seq_len or "
            f"seed; it holds {labels.tokens.shape[0]})"
        )
    if features and labels.features is None:
        raise ValueError("the shared teacher pass kept no features; an EAGLE head needs them")
    return labels.rows(0, rows)
