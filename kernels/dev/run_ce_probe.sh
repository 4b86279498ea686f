#!/usr/bin/env bash
# Builds and runs kernels/dev/ce_probe.cu (cross-entropy forward on short grids: read ceiling,
# loads-only and computing row kernels, MUFU rates) on the GPU of this machine.
# Run from anywhere: bash kernels/dev/run_ce_probe.sh [--samples N]. NVCC=... overrides nvcc;
# EXTRA_NVCC_FLAGS adds build options.
set -u
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-}
if [ -z "$NVCC" ]; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc; else NVCC=nvcc; fi
fi
OUT=${OUT_DIR:-/tmp/ce_probe}
mkdir -p "$OUT"
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
CC=${CC:-90}
if ! $NVCC -O3 -std=c++17 -gencode=arch=compute_${CC},code=sm_${CC} -I kernels -lineinfo ${EXTRA_NVCC_FLAGS:-} \
    -o "$OUT/ce_probe" kernels/dev/ce_probe.cu > "$OUT/build.log" 2>&1; then
  echo "BUILD FAILED:"; head -40 "$OUT/build.log"; exit 1
fi
nvidia-smi --query-gpu=name,uuid,clocks.max.sm,clocks.sm --format=csv,noheader 2>/dev/null
timeout 240 "$OUT/ce_probe" "$@"
