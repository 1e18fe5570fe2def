"""`python -m resispec.bench jobs`: job seconds per rule and idle cores, from a run's benchmark files and
its Snakemake log."""

import json

from resispec.bench import jobs

LOG = """Provided cores: 2
[Fri Dec  4 10:00:00 2026]
localrule prepare_model:
    jobid: 1
    wildcards: model=draft-small
[Fri Dec  4 10:00:00 2026]
localrule exactness:
    jobid: 2
[Fri Dec  4 10:01:00 2026]
Finished jobid: 2 (Rule: exactness)
[Fri Dec  4 10:02:00 2026]
Finished jobid: 1 (Rule: prepare_model)
[Fri Dec  4 10:02:00 2026]
localrule decode:
    jobid: 3
    threads: 2
[Fri Dec  4 10:03:30 2026]
Finished jobid: 3 (Rule: decode)
[Fri Dec  4 10:03:30 2026]
localrule all:
    jobid: 0
[Fri Dec  4 10:03:30 2026]
Finished jobid: 0 (Rule: all)
"""


def test_the_log_gives_wall_threads_and_idle_cores(tmp_path):
    (tmp_path / "run.log").write_text(LOG)
    timeline = jobs.parse_log(tmp_path / "run.log")
    assert timeline.cores == 2
    assert [job.rule for job in timeline.jobs] == ["prepare_model", "exactness", "decode"]
    assert [job.wildcards for job in timeline.jobs] == ["model=draft-small", "", ""]
    assert [job.seconds for job in timeline.jobs] == [120, 60, 90] and timeline.jobs[2].threads == 2
    assert timeline.wall == 210
    assert timeline.idle_core_seconds == 2 * 210 - (120 + 60 + 2 * 90)  # one core idle for a minute
    assert timeline.alone_seconds == 90  # decode holds both cores


def test_benchmark_files_first_and_the_log_for_rules_without_them(tmp_path, capsys):
    (tmp_path / "run.log").write_text(LOG)
    bench = tmp_path / "results" / "benchmarks"
    for rule, name, seconds in [("prepare_model", "draft", 118.5), ("decode", "target/a", 88.0)]:
        (bench / rule / name).parent.mkdir(parents=True, exist_ok=True)
        (bench / rule / f"{name}.tsv").write_text(f"s\th:m:s\tmax_rss\n{seconds}\t0:01:58\t100\n")
    seconds, from_log = jobs.rule_seconds(tmp_path / "results", jobs.parse_log(tmp_path / "run.log"))
    assert seconds == {"prepare_model": [118.5], "decode": [88.0], "exactness": [60.0]}
    assert from_log == {"exactness"}
    argv = ["--results", str(tmp_path / "results"), "--log", str(tmp_path / "run.log")]
    assert jobs.main(argv + ["--against", str(tmp_path / "results")]) == 0
    out = capsys.readouterr().out
    assert "exactness*" in out and "1.00" in out
    assert "wall 3.5 min on 2 cores, idle 1.0 core-minutes" in out
    assert "jobs on every core (each alone) 1.5 min of the wall" in out


def test_a_rule_timed_by_file_in_one_run_and_by_log_in_the_other_is_one_row(tmp_path, capsys):
    """An older run whose rules wrote no benchmark files compares rule by rule with a newer one."""
    (tmp_path / "run.log").write_text(LOG)
    (tmp_path / "results" / "benchmarks" / "decode").mkdir(parents=True)
    (tmp_path / "results" / "benchmarks" / "decode" / "a.tsv").write_text("s\n88.0\n")
    argv = ["--results", str(tmp_path / "results"), "--log", str(tmp_path / "run.log")]
    assert jobs.main(argv + ["--against-log", str(tmp_path / "run.log")]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()}
    assert rows["decode*"][1:3] == ["1", "88"] and rows["decode*"][5:7] == ["1", "90"]
    assert rows["decode*"][-1] == "1.02" and "decode" not in rows


def test_timed_jobs_split_into_their_timed_generations_and_the_rest(tmp_path, capsys):
    """A decode job of 90 s whose records timed 30 + 40 s spent 20 s outside them; a job without records
    (not finished) is left out."""
    results = tmp_path / "results"
    for rule, folder, name, seconds, walls in [
        ("decode", "raw", "a", 90.0, [30.0, 40.0]),
        ("decode", "raw", "b", 50.0, [45.0]),
        ("baseline", "baseline", "c", 12.0, [2.0, 2.5]),
        ("decode", None, "unfinished", 10.0, []),
    ]:
        (results / "benchmarks" / rule).mkdir(parents=True, exist_ok=True)
        (results / "benchmarks" / rule / f"{name}.tsv").write_text(f"s\th:m:s\n{seconds}\t0:01:30\n")
        if folder:
            (results / folder).mkdir(exist_ok=True)
            lines = "".join(json.dumps({"method": "m", "wall_s": wall}) + "\n" for wall in walls)
            (results / folder / f"{name}.jsonl").write_text(lines)
    split = jobs.timed_split(results)
    assert split == {"decode": ([90.0, 50.0], [70.0, 45.0]), "baseline": ([12.0], [4.5])}
    assert jobs.main(["--results", str(results)]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines() if line}
    assert rows["decode"][1:] == ["2", "140", "115", "25", "12.5", "17.9"]
    assert rows["baseline"][1:] == ["1", "12", "4", "8", "7.5", "62.5"]
