#!/usr/bin/env bash
# Create the virtual environment .venv in the repository root and install the package with the
# extra named by $1 ("run": the workflow; "dev": the workflow plus the test tools), after the Debian
# packages of that profile (scripts/system-packages.sh: LaTeX for reports/report.pdf, and for "dev" the
# SLURM and Chromium of the tests) when running as root with apt-get. Idempotent.
set -euo pipefail
extra="${1:-run}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
case "$extra" in run|dev) bash scripts/system-packages.sh "$extra" ;; esac
python="${PYTHON:-python3}"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
  || { echo "error: Python >= 3.11 is needed (found $("$python" --version))" >&2; exit 1; }
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[${extra}]"
echo "setup: .venv ready with resispec[${extra}]"
