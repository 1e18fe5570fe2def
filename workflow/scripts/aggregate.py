# Thin wrapper: rule aggregate runs the `resispec aggregate` step itself (rule -> script -> step).
from resispec.workflow.bridge import run_step
from resispec.workflow.steps import aggregate

run_step(aggregate, snakemake)  # noqa: F821 (injected by Snakemake)
