#!/usr/bin/env bash
# Correctness + speed of kernels/nsa_tiled.cu (token-tiled NSA forward for small G) next to
# kernels/nsa.cu (the grouped kernel), on an sm_90 GPU. Run from anywhere:
#   bash kernels/dev/run_nsa_tiled.sh [--check-only | --speed-only]
# Builds kernels/dev/nsa_tiled_bench.cu with nvcc (no Rust, no network), prints PASS/FAIL per shape
# and kernel against a float64 CPU reference, then a same-run timing table (median µs and nominal
# TFLOP/s, grouped vs tiled, plus a 2-warp variant of the tiled kernel for comparison).
# Exit status non-zero if the build or any check failed. About 20 s on an H100/H200.
set -u
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-}
if [ -z "$NVCC" ]; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc; else NVCC=nvcc; fi
fi
OUT=${OUT_DIR:-/tmp/nsa_tiled_bench}
mkdir -p "$OUT"
# -gencode, not -arch=sm_90a (see run_mha_wgmma.sh).
FLAGS="-O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I kernels -lineinfo"
echo "== building with $NVCC ($($NVCC --version | tail -1))"
if ! $NVCC $FLAGS -Xptxas -v -o "$OUT/ntb" kernels/dev/nsa_tiled_bench.cu > "$OUT/build.log" 2>&1; then
  echo "BUILD FAILED:"; head -60 "$OUT/build.log"; exit 1
fi
grep -A2 "Compiling entry function 'nsa_tiled" "$OUT/build.log" | grep -E "entry|Used|spill" | sed 's/^/   /'
timeout 900 "$OUT/ntb" "$@"
rc=$?
echo
[ $rc = 0 ] && echo "run_nsa_tiled: ALL OK" || echo "run_nsa_tiled: FAILURES (exit $rc)"
exit $rc
