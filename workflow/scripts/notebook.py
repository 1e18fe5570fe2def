# Thin wrapper: the work is `resispec notebook` (src/resispec/workflow/steps/notebook.py).
from resispec.workflow.bridge import run_from_snakemake

run_from_snakemake("notebook", snakemake)  # noqa: F821 (injected by Snakemake)
