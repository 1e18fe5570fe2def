# Thin wrapper: rule baseline runs the `resispec baseline` step itself (rule -> script -> step).
from resispec.workflow.bridge import run_step
from resispec.workflow.steps import baseline

run_step(baseline, snakemake)  # noqa: F821 (injected by Snakemake)
