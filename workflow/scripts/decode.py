# Thin wrapper: the work is `resispec decode` (src/resispec/workflow/steps/decode.py).
from resispec.workflow.bridge import run_from_snakemake

run_from_snakemake("decode", snakemake)  # noqa: F821 (injected by Snakemake)
