# Thin wrapper: rule paper_limits runs the `resispec paper-limits` step itself (rule -> script -> step).
from resispec.workflow.bridge import run_step
from resispec.workflow.steps import paper_limits

run_step(paper_limits, snakemake)  # noqa: F821 (injected by Snakemake)
