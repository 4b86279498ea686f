#!/usr/bin/env bash
# Correctness + speed of the memory-bound row kernels (kernels/norms.cu, kernels/softmax.cu):
# the old kernels (_v/_s), the pipelined ones (_p) and the register-resident ones (_r), same run, on a CUDA GPU (sm_80 or newer;
# the speed table is meant for H100/H200). Run from anywhere:  bash kernels/dev/run_rows_bench.sh
# Extra arguments go to the bench (--check-only, --speed-only, --flush read|memset|none (default
# read, as the harness), --flush-mult K, --no-flush, --samples N,
# --fam NAME ...). Builds kernels/dev/rows_bench.cu with nvcc (NVCC=..., else
# /usr/local/cuda/bin/nvcc, else nvcc on PATH) for the GPU's own architecture, then runs it.
# Prints PASS/FAIL counts and a table per family x shape; exit status 1 on any failure.
set -u
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-}
if [ -z "$NVCC" ]; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc; else NVCC=nvcc; fi
fi
OUT=${OUT_DIR:-/tmp/rows_bench}
mkdir -p "$OUT"
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
CC=${CC:-90}
FLAGS="-O3 -std=c++17 -gencode=arch=compute_${CC},code=sm_${CC} -I kernels -lineinfo ${EXTRA_NVCC_FLAGS:-}"
echo "== building with $NVCC ($($NVCC --version | tail -1)), sm_${CC}"
t0=$(date +%s)
if ! $NVCC $FLAGS -o "$OUT/rows_bench" kernels/dev/rows_bench.cu > "$OUT/build.log" 2>&1; then
  echo "BUILD FAILED:"; head -60 "$OUT/build.log"; exit 1
fi
echo "== built in $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,uuid,clocks.max.sm,clocks.sm,clocks.mem,driver_version --format=csv,noheader 2>/dev/null
timeout 280 "$OUT/rows_bench" "$@"
rc=$?
[ $rc = 124 ] && echo "rows_bench: TIMED OUT (280 s)"
exit $rc
