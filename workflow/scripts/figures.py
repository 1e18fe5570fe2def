# Thin wrapper: the work is `resispec figures` (src/resispec/steps/figures.py).
from resispec.workflow_bridge import run_from_snakemake

run_from_snakemake("figures", snakemake)  # noqa: F821 (injected by Snakemake)
