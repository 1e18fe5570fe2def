# Thin wrapper: the work is `resispec profile-pair` (src/resispec/workflow/steps/profile_pair.py).
from resispec.workflow.bridge import run_from_snakemake

run_from_snakemake("profile-pair", snakemake)  # noqa: F821 (injected by Snakemake)
