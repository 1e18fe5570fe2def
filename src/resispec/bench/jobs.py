"""``python -m resispec.bench jobs``: where a workflow run's time went, from its own files.

    python -m resispec.bench jobs --results results --log .snakemake/log/LATEST.snakemake.log
    python -m resispec.bench jobs --results before/results --log before.log --against after/results \\
        --against-log after.log

Per rule it prints the jobs, their seconds from ``results/benchmarks/RULE/*.tsv`` (the ``s`` column Snakemake
writes for every rule that declares ``benchmark:``) as total / median / max, and, from the Snakemake log, the
job seconds of rules without a benchmark file. From the log it also prints the run's wall time, the cores it
was given, the core-seconds no job used (idle cores: a job that needs every core waits for the others to
finish, and a single-core job at the end of a stage runs alone) and the minutes of jobs that hold every core
(the timed passes, each alone: a floor under the wall time that no scheduling lowers). For the timed passes
(rules ``decode`` and ``baseline``) it splits each job's seconds into those inside its timed generations (the
records' ``wall_s``) and the rest (the process's start and imports, loading the models, the warm-up, writing
the records and the audit's entries), since only the rest can go without changing what is timed. With
``--against`` (a second run) each number gets the second run's beside it and their ratio (second / first).
"""

from __future__ import annotations

import argparse
import csv
import re
import statistics
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from resispec.audit.aggregate import read_records

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
RULE = re.compile(r"^(?:local)?rule (\w+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
THREADS = re.compile(r"^\s+threads: (\d+)$")
WILDCARDS = re.compile(r"^\s+wildcards: (.*)$")
FINISHED = re.compile(r"^Finished jobid: (\d+)")
CORES = re.compile(r"^Provided cores: (\d+)$")


@dataclass
class Job:
    rule: str
    start: datetime
    threads: int = 1
    end: datetime | None = None
    wildcards: str = ""  # as the log writes them: "model=draft-small" ("" for a rule without)

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds() if self.end else 0.0


@dataclass
class Timeline:
    jobs: list[Job]
    cores: int

    @property
    def wall(self) -> float:
        ends = [job.end for job in self.jobs if job.end]
        return (max(ends) - min(job.start for job in self.jobs)).total_seconds() if ends else 0.0

    @property
    def idle_core_seconds(self) -> float:
        """Cores x wall minus the core-seconds jobs held (a job holds its threads, at most the cores)."""
        held = sum(min(job.threads, self.cores) * job.seconds for job in self.jobs)
        return self.cores * self.wall - held

    @property
    def alone_seconds(self) -> float:
        """Seconds of the jobs that hold every core (the timed passes): no other job runs beside them, so
        the run's wall time is at least their sum, whatever the other jobs do."""
        return sum(job.seconds for job in self.jobs if job.threads >= self.cores)


def parse_log(path: Path) -> Timeline:
    """The jobs of a Snakemake log in the order they started: rule, start, threads (1 unless the log says),
    end, wildcards."""
    jobs: dict[str, Job] = {}
    stamp, pending, cores = None, None, 1
    for line in path.read_text().splitlines():
        if match := STAMP.match(line):
            stamp = datetime.strptime(" ".join(match.group(1).split()), "%a %b %d %H:%M:%S %Y")
        elif match := CORES.match(line):
            cores = int(match.group(1))
        elif (match := RULE.match(line)) and stamp is not None:
            pending = Job(match.group(1), stamp)
        elif (match := JOBID.match(line)) and pending is not None:
            jobs[match.group(1)] = pending
        elif (match := THREADS.match(line)) and pending is not None:
            pending.threads = int(match.group(1))
        elif (match := WILDCARDS.match(line)) and pending is not None:
            pending.wildcards = match.group(1)
        elif (match := FINISHED.match(line)) and match.group(1) in jobs and stamp is not None:
            jobs[match.group(1)].end = stamp
            pending = None
    return Timeline([job for job in jobs.values() if job.rule != "all"], cores)


def job_seconds(path: Path) -> float | None:
    """A benchmark file's seconds (its last row: a retried job's last attempt), None if it has no row."""
    with path.open() as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    return float(rows[-1]["s"]) if rows else None


def benchmark_seconds(results: Path) -> dict[str, list[float]]:
    """{rule: seconds of each job} from ``results/benchmarks/RULE/**/*.tsv`` (job names may hold folders)."""
    seconds: dict[str, list[float]] = {}
    root = results / "benchmarks"
    for path in sorted(root.rglob("*.tsv")):
        if (value := job_seconds(path)) is not None:
            seconds.setdefault(path.relative_to(root).parts[0], []).append(value)
    return seconds


TIMED_RECORDS = {"decode": "raw", "baseline": "baseline"}  # timed rule -> the folder of its records


def timed_split(results: Path) -> dict[str, tuple[list[float], list[float]]]:
    """{timed rule: (each job's seconds, the seconds inside its timed generations)}, for the jobs that
    have both a benchmark file and records (``benchmarks/RULE/NAME.tsv``, ``FOLDER/NAME.jsonl``)."""
    split: dict[str, tuple[list[float], list[float]]] = {}
    for rule, folder in TIMED_RECORDS.items():
        for bench in sorted((results / "benchmarks" / rule).glob("*.tsv")):
            records, seconds = results / folder / f"{bench.stem}.jsonl", job_seconds(bench)
            if not records.is_file() or seconds is None:
                continue
            job, timed = split.setdefault(rule, ([], []))
            job.append(seconds)
            timed.append(sum(float(record["wall_s"]) for record in read_records(records)))
    return split


def print_timed_split(split: dict[str, tuple[list[float], list[float]]]) -> None:
    if not split:
        return
    print(f"{'timed rule':<16}{'jobs':>6}{'job s':>8}{'timed s':>9}{'rest s':>8}{'rest/job':>9}{'rest %':>8}")
    for rule, (job, timed) in split.items():
        rest = [j - t for j, t in zip(job, timed, strict=True)]
        print(
            f"{rule:<16}{len(job):>6}{sum(job):>8.0f}{sum(timed):>9.0f}{sum(rest):>8.0f}"
            f"{statistics.median(rest):>9.1f}{100 * sum(rest) / sum(job):>8.1f}"
        )
    print("(timed s: the records' wall_s; rest: start, imports, model load, warm-up, writing, per job)")


def rule_seconds(results: Path | None, timeline: Timeline | None) -> tuple[dict[str, list[float]], set[str]]:
    """Each rule's job seconds, benchmark files first and the log for rules without them; and the rules whose
    seconds came from the log."""
    seconds = benchmark_seconds(results) if results else {}
    from_log = set()
    for job in timeline.jobs if timeline else []:
        if job.end and (job.rule not in seconds or job.rule in from_log):
            seconds.setdefault(job.rule, []).append(job.seconds)
            from_log.add(job.rule)
    return seconds, from_log


def _cell(values: list[float] | None) -> str:
    if not values:
        return f"{'-':>6}{'-':>8}{'-':>8}{'-':>8}"
    return f"{len(values):>6}{sum(values):>8.0f}{statistics.median(values):>8.1f}{max(values):>8.1f}"


def _ratio(first: float, second: float) -> str:
    return f"{second / first:>8.2f}" if first else f"{'-':>8}"


def print_tables(runs: list[tuple[tuple[dict, set], Timeline | None]], names: list[str]) -> None:
    """Runs: ((seconds per rule, rules timed from the log), timeline or None), as ``rule_seconds`` gives."""
    head = "".join(f"{'jobs':>6}{'total s':>8}{'median':>8}{'max':>8}" for _ in runs)
    print(f"{'rule':<16}{head}" + (f"{'ratio':>8}" if len(runs) == 2 else ""))
    for rule in sorted({rule for (seconds, _), _ in runs for rule in seconds}):
        cells = [seconds.get(rule) for (seconds, _), _ in runs]
        marked = rule + ("*" if any(rule in from_log for (_, from_log), _ in runs) else "")
        line = f"{marked:<16}" + "".join(_cell(values) for values in cells)
        if len(runs) == 2:
            line += _ratio(sum(cells[0] or []), sum(cells[1] or []))
        print(line)
    print("(* some job seconds from the Snakemake log: that run's rule wrote no benchmark file)")
    for name, (_, timeline) in zip(names, runs, strict=True):
        if timeline is not None:
            minutes, idle = timeline.wall / 60, timeline.idle_core_seconds / 60
            print(f"{name}: wall {minutes:.1f} min on {timeline.cores} cores, idle {idle:.1f} core-minutes")
            alone = timeline.alone_seconds / 60
            print(f"{name}: jobs on every core (each alone) {alone:.1f} min of the wall")
    if len(runs) == 2 and all(timeline for _, timeline in runs):
        print(f"wall ratio (second / first): {runs[1][1].wall / runs[0][1].wall:.2f}")


def parse(argv):
    parser = argparse.ArgumentParser(prog="python -m resispec.bench jobs", description=__doc__)
    parser.add_argument("--results", type=Path, help="the run's results directory (benchmarks/ inside)")
    parser.add_argument("--log", type=Path, help="the run's Snakemake log (.snakemake/log/*.snakemake.log)")
    parser.add_argument("--against", type=Path, help="a second run's results directory")
    parser.add_argument("--against-log", type=Path, help="the second run's Snakemake log")
    args = parser.parse_args(argv)
    if not (args.results or args.log):
        parser.error("give --results, --log or both")
    return args


def main(argv=None) -> int:
    args = parse(argv)
    pairs = [(args.results, args.log, "first")]
    if args.against or args.against_log:
        pairs.append((args.against, args.against_log, "second"))
    runs = []
    for results, log, _ in pairs:
        timeline = parse_log(log) if log else None
        runs.append((rule_seconds(results, timeline), timeline))
    print_tables(runs, [name for _, _, name in pairs])
    for results, _, name in pairs:
        if results:
            print(f"-- {name} run's timed passes")
            print_timed_split(timed_split(results))
    return 0
