# Thin wrapper: the work is `resispec prepare-model` (src/resispec/workflow/steps/prepare_model.py).
from resispec.workflow.bridge import run_from_snakemake

run_from_snakemake("prepare-model", snakemake)  # noqa: F821 (injected by Snakemake)
