#!/usr/bin/env bash
# Correctness + speed of the fp32 GEMM kernels of kernels/gemm.cu (the register-tiled
# gemm_sgemm_* and the old gemm_simt_fp32) next to cuBLAS SGEMM without TF32, on one GPU.
# Run from anywhere:  bash kernels/dev/run_sgemm_bench.sh        (about a minute on an H100/H200)
# Needs nvcc (default /usr/local/cuda/bin/nvcc) and cuBLAS (/usr/local/cuda/lib64); no network,
# no Rust. Extra arguments go to the bench (--quick, --no-perf, --no-check).
# Prints ptxas's register/spill report for the kernels, per-shape PASS/FAIL, and a same-run
# speed table. Exit status 1 if any check failed (2 on a CUDA/cuBLAS error).
set -u
cd "$(dirname "$0")/../.."
CUDA=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA/bin/nvcc}
[ -x "$NVCC" ] || NVCC=nvcc
OUT=${OUT_DIR:-/tmp/sgemm_bench}
mkdir -p "$OUT"
ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
[ -n "$ARCH" ] || ARCH=90
echo "== building with $NVCC ($($NVCC --version | tail -1)) for sm_$ARCH"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv,noheader 2>/dev/null
if ! $NVCC -O3 -std=c++17 -gencode=arch=compute_$ARCH,code=sm_$ARCH -I kernels -Xptxas -v \
      -o "$OUT/sgb" kernels/dev/sgemm_bench.cu -L"$CUDA/lib64" -lcublas > "$OUT/build.log" 2>&1; then
  echo "BUILD FAILED:"; head -60 "$OUT/build.log"; exit 2
fi
# ptxas: registers, spills and shared memory of the fp32 kernels.
awk '/Compiling entry function/ { fn = $0; sub(/.*function ./, "", fn); sub(/. for .*/, "", fn) }
     /spill stores|Used [0-9]+ registers/ && (fn ~ /gemm_sgemm|gemm_simt|tune_128x128/) { sub(/^ptxas info *: /, ""); sub(/^ +/, ""); print "  ptxas " fn ": " $0 }' "$OUT/build.log"
export NVIDIA_TF32_OVERRIDE=0   # belt and braces: no TF32 anywhere in this process
LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}" timeout 300 "$OUT/sgb" "$@"
rc=$?
echo
[ $rc = 0 ] && echo "run_sgemm_bench: ALL OK" || echo "run_sgemm_bench: FAILED (rc $rc, see above)"
exit $rc
