"""The `.test` workflow end to end: every table, figure and the report from tiny models, with the
exactness audit holding where it must (exact verifiers at floating-point level, nothing above alpha*)."""

import csv
import json
import os
import re
import shutil

import pytest
import torch
from workflow_helpers import FAIL_ONCE_RUN, REPO, TABLES, TEST_CONFIG, outputs_manifest, snakemake

from resispec.bench.jobs import parse_log
from resispec.workflow.config import load_configs
from resispec.workflow.sheets import expand_jobs, group_baselines, group_runs

pytestmark = pytest.mark.slow
EXACT = {"specinfer", "sequoia", "ers", "first_candidate"}  # first_candidate: the example plugin


@pytest.fixture(scope="module")
def run_dir(local_test_run):
    """The session's local `.test` run (tests/workflow/conftest.py), one decode job retried once."""
    return local_test_run.directory


def test_the_chosen_decode_job_failed_once_and_was_retried(run_dir, local_test_run):
    """testing.fail_once_runs: only the chosen run failed, once, and its retry published its records."""
    markers = [p.name for p in (run_dir / "fail_once").glob("*.failed-once")]
    assert markers == [f"{FAIL_ONCE_RUN}.failed-once"]
    assert (run_dir / ".test" / "results" / "raw" / f"{FAIL_ONCE_RUN}.jsonl").is_file()
    assert local_test_run.log.count("deliberate first-attempt failure") >= 1


def test_timed_jobs_start_before_any_one_core_job_that_could_sit_beside_them(local_test_run):
    """TIMED_PRIORITY (workflow/rules/common.smk): every timed job (a timing pass, a baseline, the pair
    profile; each holds both cores) starts before the first exactness job, although exactness jobs are
    ready from the first timing pass on: no one-core job leaves a core idle between two timing passes."""
    started = re.findall(r"^(?:local)?rule (\w+):$", local_test_run.log, re.MULTILINE)
    timed = [i for i, rule in enumerate(started) if rule in {"decode", "baseline", "profile_pair"}]
    assert "exactness" in started and timed, started
    assert max(timed) < started.index("exactness"), started


def test_the_models_critical_path_starts_first(local_test_run):
    """TEACHER_PRIORITY and model_priority (workflow/rules/common.smk): once the target is ready, both of
    the teacher's parts start before any prompt job (ready at the same moment, with larger inputs), and the
    trainings start in order of their optimizer steps, the most first (tiny-draft-small's 5 after the 20
    of tiny-draft and tiny-eagle)."""
    started = parse_log(local_test_run.directory / "snakemake.log").jobs
    rules = [job.rule for job in started]
    teachers = [i for i, rule in enumerate(rules) if rule == "teacher"]
    assert len(teachers) == 2 and "prepare_data" in rules, rules
    assert max(teachers) < rules.index("prepare_data"), rules
    trainings = [job.wildcards.removeprefix("model=") for job in started if job.rule == "prepare_model"]
    assert trainings[-1] == "tiny-draft-small", trainings
    assert set(trainings[1:3]) == {"tiny-draft", "tiny-eagle"}, trainings


def read_table(root, table):
    with open(root / ".test" / "results" / "tables" / f"{table}.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_every_table_has_every_job(run_dir):
    for table in TABLES:
        rows = read_table(run_dir, table)
        sheet = (run_dir / ".test" / "experiments" / f"{table}.tsv").read_text().splitlines()
        sheet_rows = {
            line.split("\t")[0] for line in sheet[1:] if line and not line.startswith(("#", "row\t"))
        }
        assert {r["row"] for r in rows} == sheet_rows, table
        methods = {(r["row"], r["method"]) for r in rows if r["metric"] == "accepted_length"}
        assert all((row, "ers") in methods for row in sheet_rows), f"{table}: ers missing"
        assert all((row, "autoregressive") in methods for row in sheet_rows), f"{table}: baseline missing"
        speedups = {(r["row"], r["method"]) for r in rows if r["metric"] == "speedup_vs_autoregressive"}
        assert speedups == {(row, m) for row, m in methods if m != "autoregressive"}, table


def test_records_say_their_pass_and_machine(run_dir):
    """Timing records (runs and baselines) name device, host and threads; a run's record says ``audited``
    exactly where its generation kept the audit's nodes (results/audit/<run>.pt)."""
    results = run_dir / ".test" / "results"
    for folder in ("raw", "baseline"):
        for path in sorted((results / folder).glob("*.jsonl")):
            records = [json.loads(line) for line in path.read_text().splitlines()]
            for record in records:
                assert record["pass"] == "timing" and record["device"] == "cpu", path
                assert record["hostname"] and record["threads"] >= 1, path
            if folder == "raw":
                nodes = torch.load(results / "audit" / f"{path.stem}.pt", weights_only=True)["nodes"]
                kept = {(node["method"], node["prompt_id"]) for node in nodes}
                assert kept and kept == {(r["method"], r["prompt_id"]) for r in records if r["audited"]}, path
    rows = read_table(run_dir, "table4")
    assert any(r["metric"] == "kl" for r in rows) and any(r["metric"] == "kl_lumped" for r in rows)


def test_a_reader_sees_what_they_saw_before_the_work_was_shared(run_dir):
    """The report's sections, figures and paper tables, and the metrics of every (table, row, method),
    are the ones the `.test` run gave before each baseline was decoded once for the runs that share it
    (tests/workflow/data/test_outputs.json, written by `outputs_manifest` from that run; its sibling-position
    and worst-node metric names since folded as `outputs_manifest` folds them: they follow the models)."""
    expected = json.loads((REPO / "tests" / "workflow" / "data" / "test_outputs.json").read_text())
    found = outputs_manifest(run_dir / ".test")
    for key in expected:
        assert found[key] == expected[key], key


def test_each_baseline_is_decoded_once_for_every_run_that_shares_it(run_dir):
    """One autoregressive timing pass per (target, dataset, temperature, prompts); no run decodes it."""
    results = run_dir / ".test" / "results"
    for path in sorted((results / "raw").glob("*.jsonl")):
        assert all(json.loads(line)["method"] != "autoregressive" for line in path.read_text().splitlines())
    config = load_configs([REPO / "config" / "config.yaml", REPO / ".test" / "config.yaml"])
    jobs = expand_jobs(config, REPO)
    runs, baselines = group_runs(jobs), group_baselines(jobs)
    assert sorted(p.stem for p in (results / "baseline").glob("*.jsonl")) == sorted(baselines)
    assert {run["baseline"] for run in runs.values()} == set(baselines) and len(baselines) < len(runs)


def test_exact_methods_are_exact_and_below_alpha_star(run_dir):
    rows = read_table(run_dir, "table4")
    for row in rows:
        if row["method"] in EXACT and row["metric"] == "kl_max":
            assert abs(float(row["mean"])) < 1e-12, row
        if row["method"] in EXACT and row["metric"] == "max_excess_over_alpha_star":
            # alpha* bounds i.i.d. candidates only; sequoia draws without replacement
            if row["method"] != "sequoia":
                assert float(row["mean"]) < 1e-9, row


def test_accepted_length_is_within_tree_depth(run_dir):
    for row in read_table(run_dir, "table3"):
        if row["metric"] == "accepted_length":
            depth = int(row["tree"][1 : row["tree"].index("b")])
            assert 1.0 <= float(row["mean"]) <= depth


def _dry_run(run_dir, config: list[str]) -> tuple[str, dict[str, int]]:
    """A dry run of the finished `.test` workflow: its output and its job counts per rule."""
    plan = snakemake(["-n", "--cores", "2", *config], run_dir, timeout=600).stdout
    stats = plan.split("Job stats:", 1)[1].split("\n\n", 1)[0] if "Job stats:" in plan else ""
    return plan, {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", stats, re.MULTILINE)}


def _planned_jobs(run_dir, tmp_path, overlay: str) -> dict[str, int]:
    """Job counts of a dry run of the finished `.test` workflow with ``overlay`` (YAML) on top."""
    extra = tmp_path / "overlay.yaml"
    extra.write_text(overlay)
    return _dry_run(run_dir, [*TEST_CONFIG[:2], str(extra), *TEST_CONFIG[2:]])[1]


def test_the_same_command_again_has_nothing_to_do(run_dir):
    """A finished run is finished: the same command again plans no job (no rule records a path that
    differs between invocations), while an edited notebook reruns `notebook` (and the report)."""
    plan, jobs = _dry_run(run_dir, TEST_CONFIG)
    assert jobs == {} and "Nothing to be done" in plan, plan[-3000:]
    notebook = run_dir / "notebooks" / "results.ipynb"
    text, stat = notebook.read_text(), notebook.stat()
    cells = json.loads(text)
    cells["cells"].append({"cell_type": "markdown", "metadata": {}, "source": ["An edit of the user's."]})
    try:
        notebook.write_text(json.dumps(cells, indent=1))
        _, jobs = _dry_run(run_dir, TEST_CONFIG)
    finally:
        notebook.write_text(text)
        os.utime(notebook, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert {"notebook", "report"} <= set(jobs) <= {"notebook", "report", "all", "total"}, jobs


def test_changing_the_bootstrap_reruns_only_aggregation_and_the_report(run_dir, tmp_path):
    jobs = _planned_jobs(run_dir, tmp_path, "audit:\n  bootstrap: 300\n")
    assert jobs.get("aggregate") == len(TABLES), jobs
    assert set(jobs) <= {"aggregate", "paper_limits", "notebook", "report", "all", "total"}, jobs


def test_changing_threads_retrains_nothing(run_dir, tmp_path):
    jobs = _planned_jobs(run_dir, tmp_path, "threads: 2\n")
    assert "prepare_model" not in jobs and "decode" not in jobs, jobs


def test_reruns_are_identical(run_dir):
    """Seeds make reruns identical: decoding one run again reproduces its records (timings aside)."""
    records = sorted((run_dir / ".test" / "results" / "raw").glob("*.jsonl"))[0]
    before = [json.loads(line) for line in records.read_text().splitlines()]
    target = str(records.relative_to(run_dir))
    # the target first: --forcerun takes every value after it; the run's own config, so no params change
    args = [target, "--cores", "2", *TEST_CONFIG, "--forcerun", "decode"]
    snakemake(args, run_dir, timeout=600)
    after = [json.loads(line) for line in records.read_text().splitlines()]
    strip = lambda rows: [{k: v for k, v in r.items() if "time" not in k and k != "wall_s"} for r in rows]  # noqa: E731
    assert strip(before) == strip(after)


def test_report_is_built(run_dir):
    html = (run_dir / ".test" / "reports" / "report.html").read_text()
    assert "<table" in html and "data:image/png;base64" in html
    assert 'id="at-a-glance"' in html and 'id="glance-speedups"' in html


@pytest.mark.skipif(
    shutil.which("latexmk") is None, reason="latexmk not installed (scripts/system-packages.sh run)"
)
def test_report_pdf_is_built(run_dir):
    """The workflow's report job also writes report.pdf where LaTeX is installed (setup.sh run does it)."""
    assert (run_dir / ".test" / "reports" / "report.pdf").read_bytes().startswith(b"%PDF")


def test_snakemake_report_has_a_caption_for_every_result(run_dir):
    out = run_dir / "snakemake-report.zip"
    snakemake(["--configfile", ".test/config.yaml", "--report", str(out)], run_dir, timeout=600)
    import zipfile

    with zipfile.ZipFile(out) as archive:
        names = archive.namelist()
    for table in TABLES:
        assert any(name.endswith(f"{table}.csv") for name in names), f"{table}.csv missing from the report"
    assert any(name.endswith("report.html") for name in names)
    assert any(name.endswith(".png") for name in names)


def test_optimal_runs_everywhere_and_attains_alpha_star(run_dir):
    """``optimal`` decodes beside ``ers`` in every run; in the per-node audit it attains alpha* at every
    node, and no exact method accepts more than its own bound (alpha*_wor for sequoia)."""
    for table in TABLES:
        rows = read_table(run_dir, table)
        methods = {(r["row"], r["method"]) for r in rows if r["metric"] == "accepted_length"}
        assert all((r["row"], "optimal") in methods for r in rows), f"{table}: optimal missing"
    audited = 0
    for path in sorted((run_dir / ".test" / "results" / "exactness").glob("*.csv")):
        with open(path, newline="") as handle:
            for node in csv.DictReader(handle):
                if node["method"] in EXACT | {"optimal"}:
                    assert float(node["acceptance"]) <= float(node["bound"]) + 1e-9, node
                if node["method"] == "optimal":
                    assert abs(float(node["acceptance"]) - float(node["alpha_star"])) < 1e-9, node
                    audited += 1
    assert audited > 0


def test_paper_limits_variants_and_level_metrics(run_dir):
    """The paper-limits table (the paper's cells and our chain runs under both depth readings), the
    robustness variants of resispec on Table 4's runs, and accepted length without the bonus token with
    per-level acceptance in the tidy tables; the report shows both sections."""
    results = run_dir / ".test" / "results"
    with open(results / "tables" / "paper_limits.csv", newline="") as handle:
        limits = list(csv.DictReader(handle))
    paper = [r for r in limits if r["source"] == "paper" and r["verdict"] != "not constrained"]
    assert {(r["value"], r["chain_levels"], r["verdict"]) for r in paper} == {
        ("4.68", "3", "above the bound"),
        ("4.68", "4", "above the bound"),
        ("4.14", "3", "within the bound"),
        ("4.14", "4", "within the bound"),
    }
    ours = [r for r in limits if r["source"] == "ours"]
    assert {r["chain_tree"] for r in ours} == {"k1d3", "k1c3"}
    assert {"optimal", "specinfer", "ers", "resispec"} <= {r["method"] for r in ours}
    for row in ours:
        assert float(row["bound_low"]) <= float(row["bound_high"]) <= float(row["bound_low"]) + 0.01
        if row["verdict"] == "above the bound" and row["method"] != "resispec":
            assert "assumption is wrong" in row["note"]
    variants = sorted((results / "exactness_variants").glob("*.csv"))
    counts = {path.name: len(path.read_text().splitlines()) - 1 for path in variants}
    assert sum(counts.values()) > 0 and all(n % 6 == 0 for n in counts.values()), counts
    for table in ("table1", "figure1"):
        rows = read_table(run_dir, table)
        for method in ("specinfer", "resispec"):
            mine = {
                r["metric"]: float(r["mean"])
                for r in rows
                if r["method"] == method and r["row"] == rows[0]["row"]
            }
            levels = [v for m, v in mine.items() if m.startswith("level_acceptance_")]
            assert levels and mine["accepted_length_no_bonus"] == pytest.approx(mine["accepted_length"] - 1)
            assert sum(levels) >= mine["accepted_length_no_bonus"] - 1e-9  # equal unless a last step was cut
    html = (run_dir / ".test" / "reports" / "report.html").read_text()
    assert html.index('id="paper-limits"') < html.index('id="tables"') and 'id="robustness-table"' in html
