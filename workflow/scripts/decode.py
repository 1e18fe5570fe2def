# Thin wrapper: the work is `resispec decode` (src/resispec/steps/decode.py).
from resispec.workflow_bridge import run_from_snakemake

run_from_snakemake("decode", snakemake)  # noqa: F821 (injected by Snakemake)
