"""The shared teacher passes of a config (`resispec.models.teacher`): which trained models share one.

The drafts and EAGLE heads trained on one target with the same ``seq_len``, ``temperatures`` and ``amp``
(the labels depend on nothing else the config sets per model) share one pass: the target labels the
chunks of their largest ``teacher_tokens`` once, in ``teacher_jobs`` parts that run side by side, keeping
features when an EAGLE head is among them; each model reads the parts that hold its budget's chunks.
"""

from __future__ import annotations

from dataclasses import dataclass

from resispec.models.teacher_parts import teacher_parts

AMP_NAMES = {None: "auto", True: "on", False: "off"}


@dataclass(frozen=True)
class TeacherPass:
    """One shared pass: its name (a path component), target, labelling options, the chunks of its largest
    budget, whether it keeps features, its parts ([first, last) chunks) and the models that read it."""

    name: str
    target: str
    options: dict
    chunks: int
    features: bool
    parts: tuple[tuple[int, int], ...]
    models: tuple[str, ...]

    def parts_of(self, teacher_tokens: int) -> list[int]:
        """The parts holding the chunks of a budget of ``teacher_tokens`` (at least the first)."""
        rows = max(1, teacher_tokens // self.options["seq_len"])
        return [index for index, (first, _) in enumerate(self.parts) if first < rows]

    def job(self, part: int) -> dict:
        """What one part's job labels: the pass's options, budget and features, the part's chunks."""
        first, last = self.parts[part]
        return {
            "target": self.target,
            "options": self.options,
            "teacher_tokens": self.chunks * self.options["seq_len"],
            "features": self.features,
            "first": first,
            "last": last,
        }


def training_block(spec: dict) -> tuple[str, dict] | None:
    """("train" or "eagle", the block) of a trained model's config entry; None for a source."""
    for kind in ("train", "eagle"):
        if kind in spec:
            return kind, spec[kind]
    return None


def labelling(block: dict) -> dict:
    """The options of a `train` / `eagle` block that a teacher pass's labels depend on."""
    return {
        "seq_len": block["seq_len"],
        "temperatures": [float(t) for t in block["temperatures"]],
        "amp": block["amp"],
    }


def pass_name(target: str, options: dict) -> str:
    temperatures = "-".join(f"{t:g}" for t in options["temperatures"])
    return f"{target}_s{options['seq_len']}_T{temperatures}_amp-{AMP_NAMES[options['amp']]}"


def teacher_passes(models: dict, jobs: int) -> dict[str, TeacherPass]:
    """{name: TeacherPass} of a validated config's ``models`` (schema defaults filled in), ``jobs``
    parts each (``teacher_jobs``)."""
    groups: dict[str, list[tuple[str, str, dict]]] = {}
    for model, spec in models.items():
        found = training_block(spec)
        if found is None:
            continue
        kind, block = found
        groups.setdefault(pass_name(block["target"], labelling(block)), []).append((model, kind, block))
    passes = {}
    for name, members in groups.items():
        block = members[0][2]
        chunks = max(max(1, b["teacher_tokens"] // block["seq_len"]) for _, _, b in members)
        passes[name] = TeacherPass(
            name=name,
            target=block["target"],
            options=labelling(block),
            chunks=chunks,
            features=any(kind == "eagle" for _, kind, _ in members),
            parts=tuple(teacher_parts(chunks, jobs)),
            models=tuple(model for model, _, _ in members),
        )
    return passes


def model_pass(passes: dict[str, TeacherPass], model: str) -> TeacherPass | None:
    """The shared pass a trained model reads (None: a source model)."""
    return next((p for p in passes.values() if model in p.models), None)


def training_priorities(models: dict, highest: int) -> dict[str, int]:
    """{model: Snakemake priority} of a validated config's trained models: the most optimizer steps first
    (1 for the fewest, one more for each larger count of steps, at most ``highest``), so that the longest
    training starts as soon as the teacher's parts are done and the shorter ones share the other cores."""
    steps = {model: found[1]["steps"] for model, spec in models.items() if (found := training_block(spec))}
    counts = sorted(set(steps.values()))
    return {model: min(highest, 1 + counts.index(count)) for model, count in steps.items()}
