# Thin wrapper: the work is `resispec info` (src/resispec/steps/info.py).
from resispec.workflow_bridge import run_from_snakemake

run_from_snakemake("info", snakemake)  # noqa: F821 (injected by Snakemake)
