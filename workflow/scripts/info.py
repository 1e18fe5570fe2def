# Thin wrapper: rule info runs the `resispec info` step itself (rule -> script -> step).
from resispec.workflow.bridge import run_step
from resispec.workflow.steps import info

run_step(info, snakemake)  # noqa: F821 (injected by Snakemake)
