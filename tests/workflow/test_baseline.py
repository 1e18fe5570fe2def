"""The autoregressive baseline, decoded once for every run that shares it: runs are grouped by (target,
dataset, temperature, prompts) (`sheets.group_baselines`), `resispec baseline` decodes the target alone
(warm-up, seeds and resume files of the timing pass), and the tidy tables pair its records with each run's
methods by prompt (`audit.aggregate.table_rows`)."""

import json

import pytest
from workflow_helpers import REPO, tiny_decoding_dir

from resispec.audit.aggregate import table_rows
from resispec.decoding.order import WARMUP_NEW_TOKENS, prompt_seed
from resispec.decoding.session import DecodeSession
from resispec.workflow.commands import main
from resispec.workflow.config import load_config
from resispec.workflow.sheets import expand_jobs, group_baselines, group_runs

BASELINE = {
    "run": "c4_T1_t_n3",
    "target": "t",
    "dataset": "c4",
    "temperature": 1.0,
    "num_prompts": 3,
    "methods": ["autoregressive"],
}
SETTINGS = {"seed": 3, "device": "cpu", "dtype": "float32"}


def test_the_default_runs_share_six_baselines():
    """29 runs of the embedded default (no run decodes the target alone), 6 baselines (3 datasets x 2
    temperatures), each named by a run; every table job of the baseline is still there."""
    jobs = expand_jobs(load_config(REPO / "config" / "config.yaml"), REPO)
    runs, baselines = group_runs(jobs), group_baselines(jobs)
    assert len(runs) == 29 and len(baselines) == 6
    assert all("autoregressive" not in run["methods"] for run in runs.values())
    assert {run["baseline"] for run in runs.values()} == set(baselines)
    for run in runs.values():
        baseline = baselines[run["baseline"]]
        assert all(baseline[k] == run[k] for k in ("target", "dataset", "temperature", "num_prompts"))
    assert {job.run for job in jobs if job.method == "autoregressive"} == set(runs)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    root = tmp_path_factory.mktemp("baseline")
    prompts = tiny_decoding_dir(root, prompts=3, prompt_tokens=12, max_new_tokens=6)
    argv = ["baseline", "--prompts", str(root / "prompts.jsonl"), "--target", str(root / "t" / "READY.json")]
    argv += ["--job", json.dumps(BASELINE), "--settings", json.dumps(SETTINGS), "--threads", "1"]
    calls = []
    original = DecodeSession.timing_prompt
    DecodeSession.timing_prompt = lambda self, m, p, s, plan: (
        calls.append((p["prompt_id"], p["max_new_tokens"], plan)) or original(self, m, p, s, plan)
    )
    try:
        assert main([*argv, "--records", str(root / "baseline.jsonl")]) == 0
    finally:
        DecodeSession.timing_prompt = original
    records = [json.loads(line) for line in (root / "baseline.jsonl").read_text().splitlines()]
    return {"root": root, "argv": argv, "prompts": prompts, "records": records, "calls": calls}


def test_the_baseline_decodes_every_prompt_once_after_one_warm_up(baseline):
    ids = [p["prompt_id"] for p in baseline["prompts"]]
    budget = baseline["prompts"][0]["max_new_tokens"]
    warm_up = (ids[0], min(WARMUP_NEW_TOKENS, budget), None)  # the first prompt's first tokens, discarded
    assert baseline["calls"] == [warm_up, *((i, budget, None) for i in ids)]  # no audit plan: nothing kept
    records = baseline["records"]
    assert [r["prompt_id"] for r in records] == ids and {r["method"] for r in records} == {"autoregressive"}
    for record in records:
        assert record["pass"] == "timing" and record["draft"] is None and record["tree"] is None
        assert record["audited"] is False
        assert record["seed"] == prompt_seed(SETTINGS["seed"], BASELINE, record["prompt_id"])
        assert record["accepted_lengths"] == [1] * len(record["new_tokens"]) and record["new_tokens"]


def test_a_second_baseline_pass_gives_the_same_tokens(baseline):
    assert main([*baseline["argv"], "--records", str(baseline["root"] / "again.jsonl")]) == 0
    again = [json.loads(line) for line in (baseline["root"] / "again.jsonl").read_text().splitlines()]
    assert [r["new_tokens"] for r in again] == [r["new_tokens"] for r in baseline["records"]]


def test_a_job_that_is_not_a_baseline_is_refused(baseline):
    argv = list(baseline["argv"])
    argv[argv.index("--job") + 1] = json.dumps({**BASELINE, "methods": ["specinfer"]})
    with pytest.raises(ValueError, match=r"baseline 'c4_T1_t_n3': methods must be \['autoregressive'\]"):
        main([*argv, "--records", str(baseline["root"] / "refused.jsonl")])
    assert not (baseline["root"] / "refused.jsonl").exists()


def test_tables_pair_each_run_with_its_baseline_by_prompt(baseline, tmp_path):
    """Two runs share one baseline file; each run's speedup over it pairs the prompts both decoded (the
    run's records: the baseline's, labelled specinfer, four times faster: 4x on 3 prompts); a run whose
    baseline file is missing is an error naming both."""
    base = baseline["root"] / "baseline.jsonl"
    files, jobs = [], []
    for run in ("c4_T1_d3b2_t_d_n3", "c4_T1_d4b2_t_d_n3"):
        faster = [dict(r, method="specinfer", wall_s=r["wall_s"] / 4) for r in baseline["records"]]
        (tmp_path / f"{run}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in faster))
        files.append(str(tmp_path / f"{run}.jsonl"))
        for method in ("specinfer", "autoregressive"):
            jobs.append({"table": "t", "row": run, "run": run, "method": method, "baseline": BASELINE["run"]})
    (tmp_path / "c4_T1_t_n3.jsonl").write_text(base.read_text())
    settings = {"audit": {"bootstrap": 50}}
    rows = table_rows(jobs, files, [], settings, [str(tmp_path / "c4_T1_t_n3.jsonl")])
    speedups = [r for r in rows if r["metric"] == "speedup_vs_autoregressive"]
    assert len(speedups) == 2 and all(r["n"] == 3 and r["mean"] == pytest.approx(4.0) for r in speedups)
    assert {r["row"] for r in rows if r["method"] == "autoregressive"} == {j["run"] for j in jobs}
    with pytest.raises(ValueError, match="no baseline records 'c4_T1_t_n3' for run 'c4_T1_d3b2_t_d_n3'"):
        table_rows(jobs, files, [], settings, [])
