# Thin wrapper: the work is `resispec paper-limits` (src/resispec/workflow/steps/paper_limits.py).
from resispec.workflow.bridge import run_from_snakemake

run_from_snakemake("paper-limits", snakemake)  # noqa: F821 (injected by Snakemake)
