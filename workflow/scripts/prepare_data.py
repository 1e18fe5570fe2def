# Thin wrapper: the work is `resispec prepare-data` (src/resispec/steps/prepare_data.py).
from resispec.workflow_bridge import run_from_snakemake

run_from_snakemake("prepare-data", snakemake)  # noqa: F821 (injected by Snakemake)
