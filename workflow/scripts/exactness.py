# Thin wrapper: rule exactness runs the `resispec exactness` step itself (rule -> script -> step).
from resispec.workflow.bridge import run_step
from resispec.workflow.steps import exactness

run_step(exactness, snakemake)  # noqa: F821 (injected by Snakemake)
