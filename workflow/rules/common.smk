# Shared definitions: validated config (defaults come from the schema), jobs expanded from the sheets.
# A decoding run is identified by its configuration (`run`); it decodes its prompts with every method
# that any table asks of that configuration, so tables that share settings share the run.
import json
import os

from snakemake.exceptions import WorkflowError

from resispec.corpora import DATA_DIR_ENV, local_path
from resispec.decoding.tree_specs import profile_methods
from resispec.report.captions import read_captions
from resispec.workflow.config import rule_settings, validate_config
from resispec.workflow.sheets import expand_jobs, group_baselines, group_runs
from resispec.workflow.teachers import model_pass, teacher_passes, training_priorities
from resispec.workflow.steps.info import record_key
from resispec.workflow.paths import WorkflowPaths

config.update(validate_config(config))
PATHS = WorkflowPaths(config["results_dir"], config["reports_dir"])
TABLE_JOBS = {}
for _job in expand_jobs(config):
    TABLE_JOBS.setdefault(_job.table, []).append(_job)
RUNS = group_runs([job for jobs in TABLE_JOBS.values() for job in jobs])
BASELINES = group_baselines([job for jobs in TABLE_JOBS.values() for job in jobs])
FULL_VOCAB_RUNS = {
    job.run
    for table in config["audit"]["full_vocab_tables"]
    for job in TABLE_JOBS.get(table, [])
}
MONTE_CARLO_RUNS = list(
    dict.fromkeys(
        job.run
        for table in config["audit"]["monte_carlo_tables"]
        for job in TABLE_JOBS.get(table, [])
    )
)
TABLES = sorted(TABLE_JOBS)
TEACHERS = teacher_passes(config["models"], config["teacher_jobs"])


wildcard_constraints:
    run="[A-Za-z0-9._-]+",
    baseline="[A-Za-z0-9._-]+",
    table="[a-z0-9]+",
    model="[A-Za-z0-9._-]+",
    target="[A-Za-z0-9._-]+",
    dataset="[a-z0-9_]+",
    teacher="[A-Za-z0-9._-]+",
    part="[0-9]+",


def run_json(wildcards):
    return json.dumps(RUNS[wildcards.run], sort_keys=True)


def baseline_json(wildcards):
    return json.dumps(BASELINES[wildcards.baseline], sort_keys=True)


def model_spec(name):
    return json.dumps(config["models"][name], sort_keys=True)


def rule_resource(rule, key):
    """resources.rules.RULE.KEY of the config, else resources.KEY (sized by `resispec info --plan`)."""
    value = config["resources"]["rules"][rule][key]
    return config["resources"][key] if value is None else value


def gpu_jobs():
    """The `gpu` resource of a GPU rule: 1 when the models run on CUDA (`device: cuda...`), else 0. Run
    locally with `--resources gpu=N` (N GPUs on the machine), so that two such jobs never share one
    device by accident; the SLURM profile sets `gpu` itself (set-resources), so SLURM keeps its settings.
    """
    return 1 if str(config.get("device", "cpu")).startswith("cuda") else 0


def settings_json(rule):
    """The settings a rule's jobs use, and only those (resispec.workflow.config.RULE_SETTINGS)."""
    return json.dumps(rule_settings(config, rule), sort_keys=True)


def model_settings(wildcards):
    """Trained models get the training settings; materialized sources need none."""
    spec = config["models"][wildcards.model]
    return settings_json("source_model" if "source" in spec else "train_model")


def full_vocab_nodes(wildcards):
    """Nodes per method of this run whose full rows are kept (audit.full_vocab_tables)."""
    return (
        config["audit"]["full_vocab_nodes"] if wildcards.run in FULL_VOCAB_RUNS else 0
    )


def monte_carlo_nodes(wildcards):
    """Full-vocabulary nodes of this run cross-checked by Monte Carlo: audit.monte_carlo_nodes in all,
    spread evenly over the runs of audit.monte_carlo_tables in sheet order (node i goes to run
    floor(i R / N): with Table 4's six runs and two nodes, its first T = 1 and first T = 0.6 rows).
    """
    runs, total = MONTE_CARLO_RUNS, config["audit"]["monte_carlo_nodes"]
    if wildcards.run not in runs:
        return 0
    where = runs.index(wildcards.run)
    return sum(i * len(runs) // total == where for i in range(total))


def exactness_priority(wildcards):
    """The longest exactness jobs first, so that the two cores finish together after the timed jobs:
    runs with Monte Carlo nodes (100,000 sampler calls each), then runs with full-vocabulary nodes.
    """
    return (
        2 if monte_carlo_nodes(wildcards) else 1 if full_vocab_nodes(wildcards) else 0
    )


def variant_nodes(wildcards):
    """Audited resispec nodes of this run computed under every variant (audit.variant_tables' runs)."""
    runs = {
        job.run
        for table in config["audit"]["variant_tables"]
        for job in TABLE_JOBS.get(table, [])
    }
    return config["audit"]["variant_nodes"] if wildcards.run in runs else 0


# Timed jobs (they hold every local core) go before the one-core jobs that are ready beside them: two
# exactness jobs started in a gap between timing passes kept one core idle until the longer one ended
# (docs/reproduction-notes.md, "Timed jobs first"); the one-core jobs then run two at a time at the end,
# the longest first (exactness_priority).
TIMED_PRIORITY = 10
# The models' critical path goes before the other one-core jobs that are ready beside it. Every training
# waits for both of the teacher's parts, and without a priority the scheduler prefers jobs with larger
# inputs, such as the prompt jobs with their corpus files, which then delayed a part. Then the trainings
# go, the most optimizer steps first: on the embedded default that is the EAGLE head, the longest job of
# the models. See docs/reproduction-notes.md, "The models' critical path first".
TEACHER_PRIORITY = 5
TRAINING_PRIORITIES = training_priorities(config["models"], TEACHER_PRIORITY - 1)


def model_priority(wildcards):
    return TRAINING_PRIORITIES.get(wildcards.model, 0)


def timed_threads():
    """A timed job takes every core this Snakemake may use locally, so that no other job of the workflow
    runs beside it; under a cluster executor (each job has its own node share; `--jobs` is no core
    count) and inside a submitted job, the configured threads.
    """
    if not workflow.local_exec or workflow.remote_exec:
        return config["threads"]
    try:
        return max(config["threads"], workflow.cores)
    except WorkflowError:
        return config["threads"]


def corpus_input(wildcards):
    """The dataset's local corpus file, an input of its prompts (fixing the file rebuilds them and
    what depends on them); none when the corpus comes from the hub."""
    directory = config["data"]["dir"] or os.environ.get(DATA_DIR_ENV)
    return (
        {"corpus": str(local_path(wildcards.dataset, directory))} if directory else {}
    )


def teacher_inputs(wildcards):
    """A trained model's target and the parts of its shared teacher pass that hold its chunks."""
    spec = config["models"][wildcards.model]
    teacher = (spec.get("train") or spec.get("eagle") or {}).get("target") or spec.get(
        "head_of"
    )
    inputs = {"teacher": PATHS.model(teacher)} if teacher else {}
    shared = model_pass(TEACHERS, wildcards.model)
    if shared is not None:
        budget = (spec.get("train") or spec.get("eagle"))["teacher_tokens"]
        inputs["teacher_labels"] = [
            PATHS.teacher(shared.name, part) for part in shared.parts_of(budget)
        ]
    return inputs


def teacher_json(wildcards):
    """What one part of a shared teacher pass labels (`TeacherPass.job`)."""
    return json.dumps(
        TEACHERS[wildcards.teacher].job(int(wildcards.part)), sort_keys=True
    )


def decode_inputs(wildcards):
    row = RUNS[wildcards.run]
    inputs = {
        "prompts": PATHS.prompts(row["target"], row["dataset"]),
        "target": PATHS.model(row["target"]),
        "draft": PATHS.model(row["draft"]),
    }
    if profile_methods(row["tree"]):
        inputs["profile"] = PATHS.profile(row["target"], row["draft"])
    return inputs


def baseline_inputs(wildcards):
    row = BASELINES[wildcards.baseline]
    return {
        "prompts": PATHS.prompts(row["target"], row["dataset"]),
        "target": PATHS.model(row["target"]),
    }


def pair_needs(wildcards):
    """Temperatures and verifiers the pair profile of (target, draft) must cover."""
    runs = [
        run
        for run in RUNS.values()
        if (run["target"], run["draft"]) == (wildcards.target, wildcards.draft)
    ]
    methods = sorted({m for run in runs for m in profile_methods(run["tree"])})
    temperatures = sorted(
        {float(run["temperature"]) for run in runs if profile_methods(run["tree"])}
    )
    return {"methods": methods or ["sequoia"], "temperatures": temperatures or [1.0]}


def table_inputs(wildcards):
    runs = sorted({job.run for job in TABLE_JOBS[wildcards.table]})
    baselines = sorted({RUNS[run]["baseline"] for run in runs})
    return {
        "records": [PATHS.raw(run) for run in runs],
        "baselines": [PATHS.baseline(baseline) for baseline in baselines],
        "exactness": [PATHS.exactness(run) for run in runs],
    }


def table_jobs_json(wildcards):
    return json.dumps(
        [
            dict(job.describe(), run=job.run, baseline=job.baseline)
            for job in TABLE_JOBS[wildcards.table]
        ],
        sort_keys=True,
    )


def used_models():
    """READY.json of every model some run uses (and the teachers they were trained from)."""
    names = {run[key] for run in RUNS.values() for key in ("target", "draft")}
    return [PATHS.model(name) for name in sorted(names)]


def all_targets():
    return [PATHS.report_html]
