#!/usr/bin/env bash
# Session 29, one fresh machine (repo root, .devbin/ carried, nvcc + cuBLAS): the K-step-32 GEMM
# experiment of kernels/dev/gemm_k32_patch.py (patched copies under /tmp, the committed kernel
# untouched): checks of the new tiles on every bench shape in both dtypes, then ROUNDS
# (default 2) interleaved timing rounds on the bf16 squares (L2 flushed, 30 launches, cuBLAS in
# the same process), then SUITES (default "default") gated through the test binary.
# Under $OUT: log.txt, gemm-k32.txt (everything the bench printed), gate.tgz.
set -u
export OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT"
LOG=$OUT/log.txt
R=$OUT/gemm-k32.txt
CUDA=${CUDA_HOME:-/usr/local/cuda}
nvidia-smi --query-gpu=name,uuid,clocks.max.sm --format=csv,noheader | tee -a "$LOG"
D=/tmp/gk32
python3 kernels/dev/gemm_k32_patch.py . "$D" | tee -a "$LOG"
if ! $CUDA/bin/nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I "$D/kernels" -Xptxas -v \
    -o "$D/gwb" "$D/kernels/dev/gemm_wgmma_bench.cu" -L"$CUDA/lib64" -lcuda -lcublas > "$D/build.log" 2>&1; then
  echo "BUILD FAILED" | tee -a "$LOG"; head -40 "$D/build.log" | tee -a "$LOG"
fi
echo "build: nonzero spills: $(grep -E '[1-9][0-9]* bytes spill stores' "$D/build.log" | wc -l)" | tee -a "$LOG"
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
K32=128x256k32s8,128x256k32s9,192x192k32s9
echo "== checks $K32, every bench shape, bf16 and f16" >> "$R"
timeout 240 "$D/gwb" --no-perf --tiles "$K32" >> "$R" 2>&1
echo "checks rc=$? $(grep -cE '^  FAIL' "$R") FAIL lines; $(grep -c 'PASS' "$R") PASS lines" | tee -a "$LOG"
for r in $(seq 1 "${ROUNDS:-2}"); do
  echo "== round $r squares" >> "$R"
  timeout 150 "$D/gwb" --squares --bf16 --reps 30 --tiles "128x256,192x192,$K32" >> "$R" 2>&1
done
grep -E "^== round|^  [ *] .*split 1 |cuBLAS  " "$R" | tee -a "$LOG" | tail -60
SUITES="${SUITES:-default}" bash scripts/session25-run.sh
