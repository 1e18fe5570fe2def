"""Which trained models share a teacher pass, the parts it is cut into and the parts each model reads."""

import re

from workflow_helpers import REPO, snakemake

from resispec.workflow.config import load_config
from resispec.workflow.teachers import model_pass, teacher_passes, training_priorities


def test_the_default_models_share_one_pass_and_read_the_parts_of_their_budgets():
    config = load_config(str(REPO / "config" / "config.yaml"))
    passes = teacher_passes(config["models"], config["teacher_jobs"])
    assert list(passes) == ["smollm2-135m_s128_T1_amp-auto"]
    shared = passes["smollm2-135m_s128_T1_amp-auto"]
    assert set(shared.models) == {"draft-default", "draft-small", "eagle-default"}
    assert shared.features and shared.chunks == 320_000 // 128 and len(shared.parts) == config["teacher_jobs"]
    assert shared.parts_of(320_000) == [0, 1] and shared.parts_of(160_000) == [0]  # draft-small: 1250 chunks
    assert model_pass(passes, "smollm2-135m") is None
    job = shared.job(1)
    assert job["first"] == shared.parts[0][1] and job["last"] == 2500 and job["teacher_tokens"] == 320_000


def test_models_with_other_labelling_options_get_a_pass_of_their_own():
    config = load_config(str(REPO / "config" / "config.yaml"))
    models = dict(config["models"])
    models["draft-long"] = {"train": {**models["draft-small"]["train"], "seq_len": 256}}
    models["draft-cold"] = {"train": {**models["draft-small"]["train"], "temperatures": [1.0, 0.6]}}
    passes = teacher_passes(models, 3)
    assert model_pass(passes, "draft-long").name == "smollm2-135m_s256_T1_amp-auto"
    assert model_pass(passes, "draft-cold").name == "smollm2-135m_s128_T1-0.6_amp-auto"
    assert not model_pass(passes, "draft-cold").features  # no EAGLE head reads it
    assert model_pass(passes, "draft-small").name == "smollm2-135m_s128_T1_amp-auto"


def test_the_dag_labels_each_chunk_once_before_the_models_train():
    """Default config: one teacher job per part, every trained model after the parts it reads."""
    plan = snakemake(["-n", "--forceall", "--cores", "2"], REPO).stdout
    assert re.search(r"^teacher\s+2$", plan, re.MULTILINE), plan[-3000:]
    blocks = re.split(r"\n(?=(?:local)?rule \w+:)", plan)
    small = next(b for b in blocks if b.startswith("rule prepare_model:") and "model=draft-small" in b)
    assert "teachers/smollm2-135m_s128_T1_amp-auto/part0.pt" in small and "part1.pt" not in small


def test_the_trainings_with_the_most_steps_come_first():
    """Default config: the EAGLE head (1200 steps) before draft-default (200) before draft-small (150); the
    target, a source, has none; equal steps share a priority and none exceeds the highest allowed."""
    config = load_config(str(REPO / "config" / "config.yaml"))
    models = config["models"]
    assert training_priorities(models, 4) == {"eagle-default": 3, "draft-default": 2, "draft-small": 1}
    assert training_priorities(models, 2) == {"eagle-default": 2, "draft-default": 2, "draft-small": 1}
    models = {**models, "draft-twin": {"train": {**models["draft-default"]["train"]}}}
    assert training_priorities(models, 4)["draft-twin"] == training_priorities(models, 4)["draft-default"]
