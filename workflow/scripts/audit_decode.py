# Thin wrapper: rule audit_decode runs the `resispec audit-decode` step itself (rule -> script -> step).
from resispec.workflow.bridge import run_step
from resispec.workflow.steps import audit_decode

run_step(audit_decode, snakemake)  # noqa: F821 (injected by Snakemake)
