"""The workflow through Snakemake's SLURM executor on a real single-node SLURM cluster (issue 8).

The slow test starts a cluster with scripts/slurm/start-cluster.sh (Debian's slurm-wlm + munge,
installed with apt-get when missing; needs root), runs Table 2 of the `.test` workflow (12 jobs of 7
rules: model training and conversion, data, the pair profile, both decoding passes, exactness,
aggregation) with `--profile profiles/slurm` and the same target locally with the same config (seeds,
thread counts), and checks that every job ran as a SLURM job, that the results agree up to timing
fields, and that the decode job made to fail once (`testing.fail_once_dir`) was retried through SLURM.
The cluster is stopped afterwards, also on failure. The fast tests check the profile and the result
comparison without a cluster.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from slurm_helpers import (
    REPO,
    SlurmLog,
    compare_trees,
    copy_workflow,
    results_dir,
    rule_counts,
    run_snakemake,
    squeue_states,
)
from workflow_helpers import FAIL_ONCE, GPU_RULES, TEST_CONFIG, clean_env

SCRIPTS = REPO / "scripts" / "slurm"
PROFILE = REPO / "profiles" / "slurm"
WORKFLOW_RULES = {"info", "teacher", "prepare_model", "prepare_data", "decode", "exactness", "aggregate"}
WORKFLOW_RULES |= {"baseline", "profile_pair", "notebook", "report", "paper_limits", "all"}
LOCAL_RULES = {"all"}  # rules Snakemake runs in the main process (no action): never submitted
# The plugin's first status check comes this many seconds after a submission (profile: 40 s).
STATUS_DELAY_S = 5
# The part of the `.test` DAG run locally and through SLURM: Table 2 holds the run that fails once.
SLURM_TARGET = ".test/results/tables/table2.csv"


@dataclass(frozen=True)
class Cluster:
    directory: Path
    env: dict


def _free_port_pair() -> int:
    """A port p such that p (slurmctld) and p + 1 (slurmd) are free on every interface."""
    rng = random.Random()
    for _ in range(100):
        port = rng.randrange(20000, 40000)
        try:
            for candidate in (port, port + 1):
                with socket.socket() as sock:
                    sock.bind(("", candidate))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port pair found for the test cluster")


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    """A running single-node cluster; stopped by PID when the module's tests are done."""
    if os.geteuid() != 0:
        pytest.skip("the SLURM test cluster needs root (slurmd runs jobs as any user; apt-get)")
    if shutil.which("sbatch") is None and shutil.which("apt-get") is None:
        pytest.skip("SLURM is not installed and apt-get is not available to install it")
    directory = tmp_path_factory.mktemp("slurm-cluster")
    env = clean_env() | {
        "RESISPEC_SLURM_DIR": str(directory),
        "RESISPEC_SLURM_PORT": str(_free_port_pair()),
        "RESISPEC_SLURM_NODE_GPUS": "2",  # placeholder GPUs (gres.conf File=/dev/null): --gpus=1 works
        "RESISPEC_SLURM_MIN_JOB_AGE": "7200",  # squeue still lists every job of the run at the end
    }
    try:
        started = subprocess.run(
            ["bash", str(SCRIPTS / "start-cluster.sh")], env=env, capture_output=True, text=True, timeout=900
        )
        if started.returncode == 2:
            pytest.skip(f"SLURM packages could not be installed: {started.stderr.strip()}")
        assert started.returncode == 0, f"start-cluster.sh failed:\n{started.stderr}"
        yield Cluster(directory, env | {"SLURM_CONF": str(directory / "etc" / "slurm.conf")})
    finally:
        subprocess.run(["bash", str(SCRIPTS / "stop-cluster.sh")], env=env, timeout=180, check=False)


def _check_every_job_in_slurm(slurm_dir: Path, text: str, local_text: str, env: dict) -> SlurmLog:
    log = SlurmLog.parse(text)
    assert rule_counts(text) == rule_counts(local_text), "the SLURM run executed a different DAG"
    states = squeue_states(env, log.run_id)
    for job, rule in log.finished.items():
        if rule in LOCAL_RULES:
            continue
        assert job in log.submissions, f"job {job} (rule {rule}) finished without a SLURM submission"
        for slurm_id, path in log.submissions[job]:
            assert path.is_relative_to(slurm_dir / "logs" / "slurm"), f"SLURM log outside logs/slurm: {path}"
            assert path.name == f"{slurm_id}.log" and path.is_file(), f"no SLURM log {path}"
            assert f"rule {rule}:" in path.read_text(), f"{path} is not the log of a {rule} job"
            assert slurm_id in states, f"SLURM job {slurm_id} unknown to squeue (run {log.run_id})"
        assert states[log.submissions[job][-1][0]] == "COMPLETED", f"job {job} ({rule}) did not complete"
    assert len(states) == sum(len(s) for s in log.submissions.values()), "squeue lists unknown jobs"
    return log


def _check_retried(slurm_dir: Path, log: SlurmLog, env: dict) -> None:
    states = squeue_states(env, log.run_id)
    markers = sorted((slurm_dir / FAIL_ONCE).glob("*.failed-once"))
    retried = {job: subs for job, subs in log.submissions.items() if len(subs) > 1}
    assert markers, "no decode job failed on its first attempt: is testing.fail_once_dir wired?"
    assert len(retried) >= len(markers), f"{len(markers)} deliberate failures, {len(retried)} retried jobs"
    for job, subs in retried.items():
        assert log.finished[job] == "decode", f"job {job} ({log.finished[job]}) failed unexpectedly"
        assert [states[s] for s, _ in subs[:-1]] == ["FAILED"] * (len(subs) - 1)
        assert states[subs[-1][0]] == "COMPLETED"
    assert log.failed_slurm_ids == {s for subs in retried.values() for s, _ in subs[:-1]}


def _check_runs(local_dir, local_log, slurm_dir, slurm_log, configfile, cluster):
    log = _check_every_job_in_slurm(slurm_dir, slurm_log, local_log, cluster.env)
    _check_retried(slurm_dir, log, cluster.env)
    differences = compare_trees(results_dir(local_dir, configfile), results_dir(slurm_dir, configfile))
    assert not differences, "SLURM and local results differ:\n" + "\n".join(differences)


@pytest.mark.slow
def test_test_workflow_on_slurm(slurm_cluster, tmp_path):
    """Table 2 of the `.test` workflow through SLURM equals the same target run locally. Locally on one
    core: a timing job takes every local core, and the audit's rows it keeps (floats) follow the thread
    count; a SLURM job gets the configured threads (1)."""
    runs = {}
    for name, args in (("local", ["--cores", "1", "--retries", "1"]), ("slurm", _slurm_args())):
        directory = copy_workflow(REPO, tmp_path / name)
        args = [SLURM_TARGET, *args, *TEST_CONFIG]  # the target first: --config takes every value after it
        runs[name] = directory, run_snakemake(args, directory, slurm_cluster.env, 3600, f"{name}.log")
    rules = set(rule_counts(runs["local"][1]))
    assert {"prepare_model", "profile_pair", "decode", "exactness"} <= rules, rules
    _check_runs(*runs["local"], *runs["slurm"], ".test/config.yaml", slurm_cluster)


def _slurm_args() -> list[str]:
    return ["--profile", str(PROFILE), "--slurm-init-seconds-before-status-checks", str(STATUS_DELAY_S)]


def test_profile_settings_are_plugin_settings():
    """Every slurm-* key of the profile is a setting of the installed plugin (a typo would be
    rejected by Snakemake only at run time), and the documented choices hold."""
    from snakemake_executor_plugin_slurm import ExecutorSettings

    profile = yaml.safe_load((PROFILE / "config.yaml").read_text())
    fields = set(ExecutorSettings.__dataclass_fields__)
    unknown = [k for k in profile if k.startswith("slurm-") and k[6:].replace("-", "_") not in fields]
    assert not unknown, f"not settings of snakemake-executor-plugin-slurm: {unknown}"
    assert profile["executor"] == "slurm" and profile["slurm-status-command"] == "squeue"
    assert profile["slurm-logdir"] == "logs/slurm" and profile["retries"] >= 1
    assert set(profile["set-resources"]) == GPU_RULES
    assert all("gpu" in resources for resources in profile["set-resources"].values())
    assert "gpu" not in profile["default-resources"]


def test_profile_resources_follow_user_settings(tmp_path):
    """A dry run shows the account, partition and GPU type from RESISPEC_SLURM_* on GPU rules only."""
    workdir = copy_workflow(REPO, tmp_path / "wf")
    env = clean_env() | {
        "RESISPEC_SLURM_ACCOUNT": "proj42",
        "RESISPEC_SLURM_PARTITION": "gpu_part",
        "RESISPEC_SLURM_GPU_MODEL": "h100",
        "RESISPEC_SLURM_GPUS": "2",
    }
    args = ["--profile", str(PROFILE), "--dry-run", "--configfile", ".test/config.yaml"]
    text = run_snakemake(args, workdir, env, 300, "dryrun.log")
    resources = _dry_run_resources(text)
    assert set(resources) == WORKFLOW_RULES
    for rule, values in resources.items():
        assert values["slurm_account"] == "proj42" and values["slurm_partition"] == "gpu_part", rule
        gpu_expected = {"gpu": "2", "gpu_model": "h100"} if rule in GPU_RULES else {}
        assert {k: values[k] for k in ("gpu", "gpu_model") if k in values} == gpu_expected, rule


def _dry_run_resources(text: str) -> dict[str, dict[str, str]]:
    """rule -> resources printed by `snakemake --dry-run` (one job per rule kept)."""
    resources, rule = {}, None
    for line in text.splitlines():
        if line.startswith("rule ") and line.endswith(":"):
            rule = line[5:-1]
        elif line.strip().startswith("resources:") and rule:
            pairs = [item.split("=", 1) for item in line.split(":", 1)[1].split(", ")]
            resources[rule] = {k.strip(): v.strip() for k, v in pairs}
    return resources


def test_compare_trees_ignores_timing_and_logs_only(tmp_path):
    """The result comparison ignores logs/, benchmarks/ and timing fields, and nothing else."""
    trees = [tmp_path / "a", tmp_path / "b"]
    for wall, tree in zip((0.5, 9.0), trees, strict=True):
        (tree / "logs").mkdir(parents=True)
        (tree / "logs" / "x.log").write_text(f"took {wall}")
        (tree / "raw.jsonl").write_text(json.dumps({"tokens": [1, 2], "wall_s": wall, "time_draft_s": wall}))
        (tree / "t.csv").write_text(f"metric,mean\naccepted_length,2.5\nthroughput,{wall}\n")
    assert compare_trees(*trees) == []
    (trees[1] / "raw.jsonl").write_text(json.dumps({"tokens": [1, 3], "wall_s": 0.5, "time_draft_s": 0.5}))
    (trees[1] / "t.csv").write_text("metric,mean\naccepted_length,2.6\nthroughput,0.5\n")
    (trees[1] / "extra.bin").write_bytes(b"\0")
    assert compare_trees(*trees) == [
        f"only in {trees[1]}: extra.bin",
        "content differs: raw.jsonl",
        "content differs: t.csv",
    ]
