# Thin wrapper: the work is `resispec audit-decode` (src/resispec/workflow/steps/audit_decode.py).
from resispec.workflow.bridge import run_from_snakemake

run_from_snakemake("audit-decode", snakemake)  # noqa: F821 (injected by Snakemake)
