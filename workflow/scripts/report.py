# Thin wrapper: the work is `resispec report` (src/resispec/workflow/steps/report.py).
from resispec.workflow.bridge import run_from_snakemake

run_from_snakemake("report", snakemake)  # noqa: F821 (injected by Snakemake)
