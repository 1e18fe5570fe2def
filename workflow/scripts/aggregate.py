# Thin wrapper: the work is `resispec aggregate` (src/resispec/workflow/steps/aggregate.py).
from resispec.workflow.bridge import run_from_snakemake

run_from_snakemake("aggregate", snakemake)  # noqa: F821 (injected by Snakemake)
