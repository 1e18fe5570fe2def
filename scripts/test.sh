#!/usr/bin/env bash
# The test command: system packages the tests use (when root and missing), linters, the Snakemake
# lint of both configurations, then the whole pytest suite (the .test workflow end to end and the
# SLURM cluster test included). Run `bash scripts/setup.sh dev` first (the README's line does).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export RESISPEC_DATA_DIR="${RESISPEC_DATA_DIR:-$root/../shared/data}"
bash scripts/system-packages.sh dev
venv="$root/.venv/bin"
echo "== ruff"
"$venv/ruff" check src tests workflow/scripts
"$venv/ruff" format --check src tests workflow/scripts
echo "== snakefmt"
"$venv/snakefmt" --check Snakefile workflow/rules
echo "== snakemake --lint"
"$venv/snakemake" --lint --cores 1
"$venv/snakemake" --lint --cores 1 --configfile .test/config.yaml
echo "== pytest"
# Two workers share the cores with the Snakemake jobs they start: OpenMP threads that find no work sleep
# instead of spinning (libgomp's default spin-waiting slows every process down when cores are shared).
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
# Two workers (RESISPEC_TEST_WORKERS), one module at a time each, longest first (tests/conftest.py): the
# Snakemake runs leave a core idle while their timed jobs run alone, and the second worker uses it.
"$venv/python" -m pytest -q -p no:cacheprovider -n "${RESISPEC_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder --durations=40 "$@"
