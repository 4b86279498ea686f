#!/usr/bin/env bash
# Builds and runs kernels/dev/ce_probe.cu (cross-entropy forward on short grids: read ceiling,
# loads-only and computing row kernels, MUFU rates) on the GPU of this machine.
# Run from anywhere: bash kernels/dev/run_ce_probe.sh [--samples N] [--quick] [--mufu] [--edge].
# NVCC=... overrides nvcc; EXTRA_NVCC_FLAGS adds build options.
set -u
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-}
if [ -z "$NVCC" ]; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc; else NVCC=nvcc; fi
fi
OUT=${OUT_DIR:-/tmp/ce_probe}
mkdir -p "$OUT"
CC=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
case "$CC" in ''|*[!0-9]*) CC=90 ;; esac  # nvidia-smi without compute_cap: Hopper
if ! $NVCC -O3 -std=c++17 -gencode=arch=compute_${CC},code=sm_${CC} -I kernels -lineinfo ${EXTRA_NVCC_FLAGS:-} \
    -o "$OUT/ce_probe" kernels/dev/ce_probe.cu -L"${CUDA_HOME:-/usr/local/cuda}/lib64" -lcuda > "$OUT/build.log" 2>&1; then
  echo "BUILD FAILED:"; head -40 "$OUT/build.log"; exit 1
fi
# The product's warp-row modules, built apart (each includes cross_entropy_rows.cu) and timed
# by the probe through the driver API (--cubin).
CUBINS=()
for f in cross_entropy_l2rows cross_entropy_l2online; do
  if [ -f "kernels/$f.cu" ]; then
    if ! $NVCC -O3 -std=c++17 -gencode=arch=compute_${CC},code=sm_${CC} -I kernels -cubin -o "$OUT/$f.cubin" "kernels/$f.cu" >> "$OUT/build.log" 2>&1; then
      echo "BUILD FAILED ($f):"; tail -20 "$OUT/build.log"; exit 1
    fi
    CUBINS+=(--cubin "$OUT/$f.cubin")
  fi
done
nvidia-smi --query-gpu=name,uuid,clocks.max.sm,clocks.sm --format=csv,noheader 2>/dev/null
timeout 240 "$OUT/ce_probe" "${CUBINS[@]}" "$@"
