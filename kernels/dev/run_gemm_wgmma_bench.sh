#!/usr/bin/env bash
# Correctness + speed of every tile configuration x K split of kernels/gemm_wgmma.cu (Hopper
# TMA + wgmma bf16/fp16 GEMM) next to cuBLAS, on one sm_90 GPU, in one process.
# Run from anywhere:  bash kernels/dev/run_gemm_wgmma_bench.sh     (build ~1 min, run ~1 min)
# Needs nvcc (default /usr/local/cuda/bin/nvcc), libcuda and cuBLAS (/usr/local/cuda/lib64); no
# network, no Rust. Extra arguments go to the bench (--reps N, --no-perf, --quick, --bf16, --f16,
# --c2-pick: let the marked pick include the 2-CTA cluster tiles *_c2, always checked and timed).
# Prints ptxas's register/spill/smem report per entry, per-shape PASS/FAIL, a timing table per
# shape (every config x split, the host heuristic's pick marked '*', cuBLAS; median of --reps
# launches, L2 flushed before each) and a summary with geomeans. Exit status 1 if any check
# failed (2 on a build error).
set -u
cd "$(dirname "$0")/../.."
CUDA=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA/bin/nvcc}
[ -x "$NVCC" ] || NVCC=nvcc
OUT=${OUT_DIR:-/tmp/gemm_wgmma_bench}
mkdir -p "$OUT"
echo "== building with $NVCC ($($NVCC --version | tail -1)) for sm_90a"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader 2>/dev/null
if ! $NVCC -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I kernels -Xptxas -v \
      -o "$OUT/gwb" kernels/dev/gemm_wgmma_bench.cu -L"$CUDA/lib64" -lcuda -lcublas > "$OUT/build.log" 2>&1; then
  echo "BUILD FAILED:"; head -60 "$OUT/build.log"; exit 2
fi
# ptxas: registers, spills and shared memory of the GEMM entries.
awk '/Compiling entry function/ { fn = $0; sub(/.*function ./, "", fn); sub(/. for .*/, "", fn) }
     /spill stores|Used [0-9]+ registers/ && (fn ~ /^gemm_wgmma/) { sub(/^ptxas info *: /, ""); sub(/^ +/, ""); print "  ptxas " fn ": " $0 }' "$OUT/build.log"
LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}" timeout 420 "$OUT/gwb" "$@"
rc=$?
echo
[ $rc = 0 ] && echo "run_gemm_wgmma_bench: ALL OK" || echo "run_gemm_wgmma_bench: FAILED (rc $rc, see above)"
exit $rc
