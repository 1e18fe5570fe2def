#!/usr/bin/env bash
# Debian packages the test suite uses: SLURM (slurmctld, slurmd, client) and munge (the real single-node
# cluster test), Chromium (the report screenshot test), latexmk and TeX (the PDF report). Installed only when missing and
# when running as root with apt-get; otherwise the tests that need them say why they are skipped.
set -uo pipefail
packages=(slurmctld slurmd slurm-client munge chromium latexmk texlive-latex-base texlive-latex-recommended)
commands=(slurmctld slurmd sbatch munged chromium latexmk pdflatex /usr/share/texlive/texmf-dist/tex/latex/booktabs/booktabs.sty)
missing=()
for i in "${!packages[@]}"; do
  c="${commands[$i]}"
  command -v "$c" >/dev/null 2>&1 || [ -x "/usr/sbin/$c" ] || [ -f "$c" ] || missing+=("${packages[$i]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "system-packages: missing ${missing[*]} (not root or no apt-get); dependent tests will skip" >&2
  exit 0
fi
echo "system-packages: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
  || echo "system-packages: apt-get failed for ${missing[*]}; dependent tests will skip" >&2
exit 0
