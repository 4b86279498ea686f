#!/usr/bin/env bash
# What `cargo test -- FILTER` costs with the debug (dev-profile) test binary against the release
# one, on the GPU machine, from the repo root, with both carried in .devbin/ (kernels = release,
# kernels-debug = `cargo test --no-run --test kernels`). The release binary runs first to warm the
# NVRTC cache, then debug and release alternate, twice each. Wall seconds per run to stdout and
# $OUT/debug-vs-release.txt.
#   FILTER=nsa (default)
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT"
export KERNELGATE_CACHE_DIR=/tmp/kgcache KERNELGATE_RESULTS_DIR=/tmp/kg-dvr
f=${FILTER:-nsa}
one() {  # one NAME BIN: a run, its wall seconds and libtest's result line
  local t0 t1
  t0=$(date +%s.%N)
  "$2" "$f" > "$OUT/dvr-$1.log" 2>&1
  t1=$(date +%s.%N)
  printf '%-8s %6.1f s  %s\n' "$1" "$(python3 -c "print($t1 - $t0)")" "$(grep '^test result' "$OUT/dvr-$1.log")" | tee -a "$OUT/debug-vs-release.txt"
}
one warm .devbin/kernels > /dev/null
for i in 1 2; do one debug .devbin/kernels-debug; one release .devbin/kernels; done
