# Thin wrapper: rule teacher runs the `resispec teacher` step itself (rule -> script -> step).
from resispec.workflow.bridge import run_step
from resispec.workflow.steps import teacher

run_step(teacher, snakemake)  # noqa: F821 (injected by Snakemake)
