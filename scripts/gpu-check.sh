#!/usr/bin/env bash
# Issue 21's GPU check in one call, on a machine with a CUDA GPU and PyTorch + transformers installed
# (no install step, no network), from the repository root:
#   1. `bench gpu` as it defaults: the eager engine on every tree and method (about 3 min);
#   2. the compiled engine (CUDA graphs, compile_mode="reduce-overhead") on the goals' tree d5b3 for
#      specinfer and optimal, after a whole warm-up generation per method so that every graph is built
#      before the timing (compiling takes minutes; host syncs are not counted again).
# Both passes share one inductor cache, $out/inductor-cache (TORCHINDUCTOR_CACHE_DIR, unless set), so the
# compiled pass reuses what an earlier run compiled. Each pass has a time limit (GPU_CHECK_EAGER_S, GPU_CHECK_COMPILED_S seconds). Its JSON is saved after
# every configuration, so a pass stopped at its limit keeps what it measured. Output goes to $OUT (or
# results/bench): gpu-eager.{json,log}, gpu-compiled.{json,log}. Exit status: the first failing pass's.
# Arguments go to both passes, after their own (so they win): `scripts/gpu-check.sh --device cpu --scale
# tiny` runs the same two passes on a CPU in seconds (tests/bench/test_gpu_check_script.py).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${OUT:-$root/results/bench}"
mkdir -p "$out"
export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-$out/inductor-cache}"
mkdir -p "$TORCHINDUCTOR_CACHE_DIR"
export PYTHONPATH="$root/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
python="${PYTHON:-python3}"
status=0

pass() {  # name, seconds, bench gpu arguments...
  local name="$1" limit="$2"
  shift 2
  echo "[gpu-check] $name: limit ${limit} s" >&2
  timeout "$limit" "$python" -m resispec.bench gpu --json "$out/gpu-$name.json" "$@" 2>&1 \
    | tee "$out/gpu-$name.log"
  local rc="${PIPESTATUS[0]}"
  echo "[gpu-check] $name: exit $rc" >&2
  [ "$status" -ne 0 ] || status="$rc"
}

command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
pass eager "${GPU_CHECK_EAGER_S:-330}" "$@"
pass compiled "${GPU_CHECK_COMPILED_S:-240}" --compile reduce-overhead --trees d5b3 \
  --methods specinfer,optimal --nodes 1,121 --sync-tokens 0 --warmup-tokens 64 "$@"
exit "$status"
