# Thin wrapper: the work is `resispec info` (src/resispec/workflow/steps/info.py).
from resispec.workflow.bridge import run_from_snakemake

run_from_snakemake("info", snakemake)  # noqa: F821 (injected by Snakemake)
