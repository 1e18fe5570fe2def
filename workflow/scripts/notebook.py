# Thin wrapper: rule notebook runs the `resispec notebook` step itself (rule -> script -> step).
from resispec.workflow.bridge import run_step
from resispec.workflow.steps import notebook

run_step(notebook, snakemake)  # noqa: F821 (injected by Snakemake)
