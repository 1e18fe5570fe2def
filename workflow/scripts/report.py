# Thin wrapper: rule report runs the `resispec report` step itself (rule -> script -> step).
from resispec.workflow.bridge import run_step
from resispec.workflow.steps import report

run_step(report, snakemake)  # noqa: F821 (injected by Snakemake)
