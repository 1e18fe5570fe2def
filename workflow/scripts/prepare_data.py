# Thin wrapper: the work is `resispec prepare-data` (src/resispec/workflow/steps/prepare_data.py).
from resispec.workflow.bridge import run_from_snakemake

run_from_snakemake("prepare-data", snakemake)  # noqa: F821 (injected by Snakemake)
