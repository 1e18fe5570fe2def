#!/usr/bin/env bash
# Debian packages the workflow and the tests use, installed only when missing and when running as root
# with apt-get; otherwise what needs them says why it is skipped.
#   run: latexmk and TeX (reports/report.pdf from the main command)
#   dev: those, plus SLURM (slurmctld, slurmd, client) and munge (the real single-node cluster test) and
#        Chromium (the report screenshot test)
# `--list` prints the missing packages of the profile and installs nothing.
set -uo pipefail
profile="${1:-dev}"
list_only="${2:-}"
latex_packages=(latexmk texlive-latex-base texlive-latex-recommended)
latex_commands=(latexmk pdflatex /usr/share/texlive/texmf-dist/tex/latex/booktabs/booktabs.sty)
case "$profile" in
  run) packages=("${latex_packages[@]}"); commands=("${latex_commands[@]}") ;;
  dev) packages=(slurmctld slurmd slurm-client munge chromium "${latex_packages[@]}")
       commands=(slurmctld slurmd sbatch munged chromium "${latex_commands[@]}") ;;
  *) echo "system-packages: profile must be run or dev, got '$profile'" >&2; exit 2 ;;
esac
missing=()
for i in "${!packages[@]}"; do
  c="${commands[$i]}"
  command -v "$c" >/dev/null 2>&1 || [ -x "/usr/sbin/$c" ] || [ -f "$c" ] || missing+=("${packages[$i]}")
done
if [ "$list_only" = "--list" ]; then
  [ ${#missing[@]} -eq 0 ] || printf "%s\n" "${missing[@]}"
  exit 0
fi
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "system-packages: missing ${missing[*]} (not root or no apt-get); install them to get what needs them" >&2
  exit 0
fi
echo "system-packages: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
  || echo "system-packages: apt-get failed for ${missing[*]}; what needs them will say why it is skipped" >&2
exit 0
