#!/usr/bin/env bash
# Builds and runs kernels/dev/skinny_n_bench.cu (the skinny-N GEMM variants, the shipped kernel
# and cuBLAS) on this machine's GPU. Run from anywhere; needs nvcc and cuBLAS, no Rust.
# OUT_DIR (default /tmp/skinny_n_bench) receives the binary and ptxas's report.
set -u
cd "$(dirname "$0")/../.."
CUDA=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA/bin/nvcc}
OUT=${OUT_DIR:-/tmp/skinny_n_bench}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,uuid,clocks.max.sm,power.limit --format=csv,noheader 2>/dev/null
if ! "$NVCC" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I kernels -Xptxas -v \
      -o "$OUT/snb" kernels/dev/skinny_n_bench.cu -L"$CUDA/lib64" -lcublas > "$OUT/build.log" 2>&1; then
  echo "BUILD FAILED:"; head -60 "$OUT/build.log"; exit 2
fi
grep -c "spill stores" "$OUT/build.log" | sed 's/^/ptxas reports: /'
grep -B1 -A0 "[1-9][0-9]* bytes spill" "$OUT/build.log" | head -20
LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}" timeout 400 "$OUT/snb" "$@"
