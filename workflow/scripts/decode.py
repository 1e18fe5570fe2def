# Thin wrapper: rule decode runs the `resispec decode` step itself (rule -> script -> step).
from resispec.workflow.bridge import run_step
from resispec.workflow.steps import decode

run_step(decode, snakemake)  # noqa: F821 (injected by Snakemake)
