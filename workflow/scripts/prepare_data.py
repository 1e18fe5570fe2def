# Thin wrapper: rule prepare_data runs the `resispec prepare-data` step itself (rule -> script -> step).
from resispec.workflow.bridge import run_step
from resispec.workflow.steps import prepare_data

run_step(prepare_data, snakemake)  # noqa: F821 (injected by Snakemake)
