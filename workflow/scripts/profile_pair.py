# Thin wrapper: rule profile_pair runs the `resispec profile-pair` step itself (rule -> script -> step).
from resispec.workflow.bridge import run_step
from resispec.workflow.steps import profile_pair

run_step(profile_pair, snakemake)  # noqa: F821 (injected by Snakemake)
