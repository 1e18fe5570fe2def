"""The GPU plan of config/paper.yaml: per model job its memory and time, and the resources they give."""

from __future__ import annotations

import subprocess
import sys

import pytest
from workflow_helpers import REPO

from resispec.workflow import plan
from resispec.workflow.config import load_configs
from resispec.workflow.sheets import expand_jobs, group_baselines, group_runs

PAPER = [str(REPO / "config" / "config.yaml"), str(REPO / "config" / "paper.yaml")]
LLAMA_2_7B_PARAMS = 6_738_415_616  # the published parameter count of Llama-2-7B (norm weights included)


@pytest.fixture(scope="module")
def paper():
    config = load_configs(PAPER)
    jobs = expand_jobs(config, REPO)
    runs, baselines = group_runs(jobs), group_baselines(jobs)
    return config, runs, plan.plan(config, plan.GPUS["a100-40gb"], runs, baselines)


def test_model_sizes_follow_the_published_shapes(paper):
    config, _, _ = paper
    llama = plan.model_size("llama-2-7b", config["models"]["llama-2-7b"])
    assert abs(llama.params - LLAMA_2_7B_PARAMS) / LLAMA_2_7B_PARAMS < 1e-4  # norms are not counted
    assert llama.kv_width == 4096 and llama.layers == 32
    tiny = plan.model_size("tinyllama-1.1b", config["models"]["tinyllama-1.1b"])
    assert tiny.kv_width == 256  # 4 KV heads of 64: grouped-query attention shrinks its cache 8x
    assert abs(tiny.params - 1.1e9) / 1.1e9 < 0.01


def test_every_run_has_a_decode_plan_that_fits_the_gpu(paper):
    _, runs, jobs = paper
    decode = {job.job: job for job in jobs if job.rule == "decode"}
    assert set(decode) == set(runs)
    weights_7b = LLAMA_2_7B_PARAMS * 2 / 1e9  # float16
    for job in decode.values():
        assert job.gpu_gb < plan.GPUS["a100-40gb"].memory_gb, job
        if "llama-2-7b" in job.job.split("_"):
            assert job.gpu_gb > weights_7b and job.host_gb > weights_7b
    # one step is bound by reading the 7B weights once: 13.5 GB at 1555 GB/s, plus the draft and overhead
    d5b3 = decode["cnn_dailymail_T1_d5b3_llama-2-7b_jf68m_n200"]
    assert weights_7b / 1555 < d5b3.step_s < weights_7b / 1555 + plan.STEP_OVERHEAD_S + 0.01
    assert d5b3.steps == 200 * len(runs[d5b3.job]["methods"]) * 128


def test_each_baseline_is_planned_once_with_the_target_alone(paper):
    """A baseline job per (target, dataset, temperature, prompts): one token per forward of the target."""
    _, runs, jobs = paper
    baselines = {job.job: job for job in jobs if job.rule == "baseline"}
    assert set(baselines) == {run["baseline"] for run in runs.values()} and len(baselines) < len(runs)
    weights_7b = LLAMA_2_7B_PARAMS * 2 / 1e9
    cnn = baselines["cnn_dailymail_T1_llama-2-7b_n200"]
    assert weights_7b / 1555 < cnn.step_s < weights_7b / 1555 + plan.STEP_OVERHEAD_S + 0.001
    assert cnn.steps == 200 * 128


def test_paper_resources_cover_the_plan(paper):
    config, _, jobs = paper
    for rule, needs in plan.recommended_resources(jobs).items():
        ours = config["resources"]["rules"][rule]
        assert ours["mem_mb"] >= needs["mem_mb"] and ours["runtime"] >= needs["runtime"], (rule, ours, needs)


def test_info_plan_prints_every_job():
    out = subprocess.run(
        [sys.executable, "-m", "resispec", "info", "--plan", "--configfile", *PAPER],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    assert "sequoia128x8_llama-2-7b_jf68m" in out and "eagle_llama-2-7b-chat_eagle-llama2-chat-7b" in out
    assert "jobs over a100-40gb: none" in out and "resources.rules for the config" in out


def test_plan_rejects_models_without_published_sizes():
    config = load_configs([str(REPO / "config" / "config.yaml")])
    with pytest.raises(ValueError, match="hf: source"):
        plan.plan(config, plan.GPUS["a100-40gb"], group_runs(expand_jobs(config, REPO)))


def test_dtype_auto_is_planned_in_what_each_gpu_runs(paper):
    """``auto``: bfloat16 weights where the GPU has bfloat16, float32 (twice the bytes) on a V100."""
    config, runs, _ = paper
    auto = {**config, "dtype": "auto"}
    cnn = "cnn_dailymail_T1_d5b3_llama-2-7b_jf68m_n200"
    gb = {}
    for name in ("a100-40gb", "v100-32gb"):
        jobs = plan.plan(auto, plan.GPUS[name], {cnn: runs[cnn]}, {})
        gb[name] = next(job.gpu_gb for job in jobs if job.rule == "decode")
    weights_7b = LLAMA_2_7B_PARAMS * 2 / 1e9
    assert weights_7b < gb["a100-40gb"] < 2 * weights_7b < gb["v100-32gb"]
    float16 = plan.plan({**config, "dtype": "float16"}, plan.GPUS["v100-32gb"], {cnn: runs[cnn]}, {})
    assert next(job.gpu_gb for job in float16 if job.rule == "decode") == gb["a100-40gb"]  # named: kept
