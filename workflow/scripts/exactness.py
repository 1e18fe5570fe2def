# Thin wrapper: the work is `resispec exactness` (src/resispec/workflow/steps/exactness.py).
from resispec.workflow.bridge import run_from_snakemake

run_from_snakemake("exactness", snakemake)  # noqa: F821 (injected by Snakemake)
