# Thin wrapper: the work is `resispec prepare-model` (src/resispec/steps/prepare_model.py).
from resispec.workflow_bridge import run_from_snakemake

run_from_snakemake("prepare-model", snakemake)  # noqa: F821 (injected by Snakemake)
