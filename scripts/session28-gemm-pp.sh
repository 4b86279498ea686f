#!/usr/bin/env bash
# Session 28 (repo root, nvcc and cuBLAS on the machine): issue 12's squares. Builds the dev
# GEMM bench (kernels/dev/gemm_wgmma_bench.cu with the ping-pong experiment
# kernels/dev/gemm_pp_dev.cu) twice: as is, and with the shipped tiles' epilogue stores cut off
# ("noepi": a diagnostic of what the epilogue costs; its checks fail by design). Then: every
# bench shape checked on the ping-pong tiles (both dtypes), and ROUNDS (default 2) interleaved
# timing rounds on the bf16 squares: base (shipped 128x256 and 128x128, the pp tiles, cuBLAS)
# and noepi (128x256).
# Under $OUT: log.txt, gemm-pp.txt (everything the bench printed).
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT"
LOG=$OUT/log.txt
R=$OUT/gemm-pp.txt
CUDA=${CUDA_HOME:-/usr/local/cuda}
NVCC=$CUDA/bin/nvcc
nvidia-smi --query-gpu=name,uuid,clocks.max.sm --format=csv,noheader | tee -a "$LOG"
build() {  # build NAME [SED-EXPRESSION on gemm_wgmma.cu]
  local d=/tmp/gx-$1
  mkdir -p "$d/kernels/dev"
  cp kernels/*.cu kernels/*.cuh "$d/kernels/"
  cp kernels/dev/gemm_wgmma_bench.cu kernels/dev/gemm_pp_dev.cu "$d/kernels/dev/"
  [ -n "${2:-}" ] && sed -i "$2" "$d/kernels/gemm_wgmma.cu"
  if ! $NVCC -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I "$d/kernels" -Xptxas -v \
      -o "$d/gwb" "$d/kernels/dev/gemm_wgmma_bench.cu" -L"$CUDA/lib64" -lcuda -lcublas > "$d/build.log" 2>&1; then
    echo "BUILD $1 FAILED" | tee -a "$LOG"; head -40 "$d/build.log" | tee -a "$LOG"
  fi
  grep -c "spill" "$d/build.log" | sed "s/^/build $1: spill lines /" | tee -a "$LOG"
}
build base &
build noepi 's/^\( *\)if (row < M \&\& col < N)$/\1if (row < M \&\& col < N \&\& M < 0)/' &
wait
grep -c "M < 0" /tmp/gx-noepi/kernels/gemm_wgmma.cu | sed 's/^/noepi edits: /' | tee -a "$LOG"
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
echo "== checks, pp tiles, every bench shape" >> "$R"
timeout 200 /tmp/gx-base/gwb --no-perf --tiles 128x128_pp,64x256_pp >> "$R" 2>&1
echo "checks rc=$? $(grep -cE '^  FAIL' "$R") FAIL lines; $(tail -1 "$R")" | tee -a "$LOG"
for r in $(seq 1 "${ROUNDS:-2}"); do
  echo "== round $r base" >> "$R"
  timeout 120 /tmp/gx-base/gwb --squares --bf16 --reps 30 --tiles 128x256,128x128,128x128_pp,64x256_pp >> "$R" 2>&1
  echo "== round $r noepi" >> "$R"
  timeout 60 /tmp/gx-noepi/gwb --squares --bf16 --reps 30 --tiles 128x256 >> "$R" 2>&1
done
grep -E "^== round|^  [ *] |cuBLAS  " "$R" | tee -a "$LOG" | head -80
