# Thin wrapper: the work is `resispec report` (src/resispec/steps/report.py).
from resispec.workflow_bridge import run_from_snakemake

run_from_snakemake("report", snakemake)  # noqa: F821 (injected by Snakemake)
