#!/usr/bin/env bash
# Session 28 (repo root, nvcc and cuBLAS on the machine): issue 12's squares through the dev GEMM
# bench (kernels/dev/gemm_wgmma_bench.cu). Builds it twice: as is, and with the shipped tiles'
# epilogue stores cut off ("noepi": a diagnostic of what the epilogue costs; its checks fail by
# design). Then every bench shape checked on the CHECK_TILES (default: every tile; both dtypes,
# and run-to-run bitwise equality where split) and ROUNDS (default 2) interleaved timing rounds
# on the bf16 squares: base (TILES, default 128x256, 128x192, 128x256_c2; cuBLAS) and noepi
# (128x256). NOEPI=0 leaves the noepi build and rounds out, CHECKS=0 the checks. Session 28 ran
# it with two experiments since removed: the ping-pong tiles of kernels/dev/gemm_pp_dev.cu
# (commit 913cfdb) and the stream-K tile of kernels/gemm_wgmma_sk.cu (commit 987b631); their
# results are in docs/kernels/session28/.
# Under $OUT: log.txt, gemm-bench.txt (everything the bench printed).
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT"
LOG=$OUT/log.txt
R=$OUT/gemm-bench.txt
CUDA=${CUDA_HOME:-/usr/local/cuda}
NVCC=$CUDA/bin/nvcc
nvidia-smi --query-gpu=name,uuid,clocks.max.sm --format=csv,noheader | tee -a "$LOG"
build() {  # build NAME [SED-EXPRESSION on gemm_wgmma.cu]
  local d=/tmp/gx-$1
  mkdir -p "$d/kernels/dev"
  cp kernels/*.cu kernels/*.cuh "$d/kernels/"
  cp kernels/dev/gemm_wgmma_bench.cu "$d/kernels/dev/"
  [ -n "${2:-}" ] && sed -i "$2" "$d/kernels/gemm_wgmma.cu"
  if ! $NVCC -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I "$d/kernels" -Xptxas -v \
      -o "$d/gwb" "$d/kernels/dev/gemm_wgmma_bench.cu" -L"$CUDA/lib64" -lcuda -lcublas > "$d/build.log" 2>&1; then
    echo "BUILD $1 FAILED" | tee -a "$LOG"; head -40 "$d/build.log" | tee -a "$LOG"
  fi
  grep -c "spill" "$d/build.log" | sed "s/^/build $1: spill lines /" | tee -a "$LOG"
}
build base &
[ "${NOEPI:-1}" = 1 ] && build noepi 's/^\( *\)if (row < M \&\& col < N)$/\1if (row < M \&\& col < N \&\& M < 0)/' &
wait
[ "${NOEPI:-1}" = 1 ] && grep -c "M < 0" /tmp/gx-noepi/kernels/gemm_wgmma.cu | sed 's/^/noepi edits: /' | tee -a "$LOG"
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
if [ "${CHECKS:-1}" = 1 ]; then
  echo "== checks, ${CHECK_TILES:-every tile}, every bench shape" >> "$R"
  timeout 300 /tmp/gx-base/gwb --no-perf ${CHECK_TILES:+--tiles "$CHECK_TILES"} >> "$R" 2>&1
  echo "checks rc=$? $(grep -cE '^  FAIL' "$R") FAIL lines; $(tail -1 "$R")" | tee -a "$LOG"
fi
for r in $(seq 1 "${ROUNDS:-2}"); do
  echo "== round $r base" >> "$R"
  timeout 120 /tmp/gx-base/gwb --squares --bf16 --reps 30 --tiles "${TILES:-128x256,128x192,128x256_c2}" >> "$R" 2>&1
  if [ "${NOEPI:-1}" = 1 ]; then
    echo "== round $r noepi" >> "$R"
    timeout 60 /tmp/gx-noepi/gwb --squares --bf16 --reps 30 --tiles 128x256 >> "$R" 2>&1
  fi
done
grep -E "^== round|^  [ *] |cuBLAS  " "$R" | tee -a "$LOG" | head -80
