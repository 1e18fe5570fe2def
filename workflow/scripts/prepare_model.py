# Thin wrapper: rule prepare_model runs the `resispec prepare-model` step itself (rule -> script -> step).
from resispec.workflow.bridge import run_step
from resispec.workflow.steps import prepare_model

run_step(prepare_model, snakemake)  # noqa: F821 (injected by Snakemake)
