#!/usr/bin/env bash
# Debian packages the test suite uses: SLURM + munge (the real single-node cluster test), Chromium
# (the report screenshot test), latexmk and TeX (the PDF report). Installed only when missing and
# when running as root with apt-get; otherwise the tests that need them say why they are skipped.
set -uo pipefail
packages=(slurm-wlm munge chromium latexmk texlive-latex-recommended texlive-latex-extra)
commands=(slurmctld munged chromium latexmk pdflatex pdflatex)
missing=()
for i in "${!packages[@]}"; do
  command -v "${commands[$i]}" >/dev/null 2>&1 || [ -x "/usr/sbin/${commands[$i]}" ] || missing+=("${packages[$i]}")
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
