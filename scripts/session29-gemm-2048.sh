#!/usr/bin/env bash
# Session 29, one fresh machine (repo root, .devbin/ carried, nvcc + cuBLAS + Nsight Compute):
# 1. SUITES (default "gemm gemm_edges nsa_irregular") gated through the test binary
#    (scripts/session25-run.sh): between-machine evidence for the entries session 28 restarted.
# 2. Issue 12 at 2048^3, dev bench only (kernels/gemm_wgmma.cu itself is not edited; every
#    variant is a sed on a copy):
#    - base: every tile at 2048^3 (ROUNDS interleaved rounds, bf16, L2 flushed, 30 launches);
#    - noma: the same body with the wgmma instructions removed (loads, barriers and the epilogue
#      only; its checks fail by design): how long the operand traffic alone takes, plain
#      against 2-CTA multicast;
#    - x: a 192x192_c2 entry (cuBLAS's 3072^3 tile in its 2-CTA cluster), checked on every bench
#      shape and timed on the squares beside 192x192 and 128x256;
#    - Nsight Compute at 2048^3 of 128x256, 128x256_c2 and cuBLAS's kernel.
# Under $OUT: log.txt, gate.tgz, gemm-bench.txt, ncu.tar.gz.
set -u
export OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT"
LOG=$OUT/log.txt
R=$OUT/gemm-bench.txt
CUDA=${CUDA_HOME:-/usr/local/cuda}
NVCC=$CUDA/bin/nvcc
if [ "${SUITES-x}" != "" ]; then SUITES="${SUITES:-gemm gemm_edges nsa_irregular}" bash scripts/session25-run.sh; fi
nvidia-smi --query-gpu=name,uuid,clocks.max.sm --format=csv,noheader | tee -a "$LOG"
build() {  # build NAME [SED on gemm_wgmma.cu] [SED on the bench]
  local d=/tmp/gx-$1
  mkdir -p "$d/kernels/dev"
  cp kernels/*.cu kernels/*.cuh "$d/kernels/"
  cp kernels/dev/gemm_wgmma_bench.cu "$d/kernels/dev/"
  [ -n "${2:-}" ] && sed -i "$2" "$d/kernels/gemm_wgmma.cu"
  [ -n "${3:-}" ] && sed -i "$3" "$d/kernels/dev/gemm_wgmma_bench.cu"
  if ! $NVCC -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I "$d/kernels" -Xptxas -v \
      -o "$d/gwb" "$d/kernels/dev/gemm_wgmma_bench.cu" -L"$CUDA/lib64" -lcuda -lcublas > "$d/build.log" 2>&1; then
    echo "BUILD $1 FAILED" | tee -a "$LOG"; head -40 "$d/build.log" | tee -a "$LOG"
  fi
  echo "build $1: $(grep -c 'spill' "$d/build.log") spill lines, $(grep -c 'bytes spill stores' "$d/build.log") entries; nonzero spills: $(grep -E '[1-9][0-9]* bytes spill stores' "$d/build.log" | wc -l)" | tee -a "$LOG"
}
build base &
build noma 's/^\( *\)wgmma_tile<BF16, BN>(d, da, db);$/\1(void)da; (void)db;/' &
build x 's/^GW_ENTRY(gemm_wgmma_f16_192x192, __half, false, Cfg192x192, 1)$/&\nGW_ENTRY_C2(gemm_wgmma_bf16_192x192_c2, __nv_bfloat16, true, Cfg192x192)\nGW_ENTRY_C2(gemm_wgmma_f16_192x192_c2, __half, false, Cfg192x192)/' \
  's/^\( *\){"192x192", 192, 192, 4, 1, 860, 8000, 1, false, (const void\*)gemm_wgmma_bf16_192x192, (const void\*)gemm_wgmma_f16_192x192},$/&\n\1{"192x192_c2", 192, 192, 4, 1, 860, 8000, 2, false, (const void*)gemm_wgmma_bf16_192x192_c2, (const void*)gemm_wgmma_f16_192x192_c2},/; s/^static const int NT = 11;$/static const int NT = 12;/' &
wait
echo "noma edits: $(grep -c '(void)da; (void)db;' /tmp/gx-noma/kernels/gemm_wgmma.cu); x edits: $(grep -c 192x192_c2 /tmp/gx-x/kernels/gemm_wgmma.cu) $(grep -c 192x192_c2 /tmp/gx-x/kernels/dev/gemm_wgmma_bench.cu) $(grep -c 'NT = 12' /tmp/gx-x/kernels/dev/gemm_wgmma_bench.cu)" | tee -a "$LOG"
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
NCU_BIN=$(command -v ncu || ls $CUDA/bin/ncu 2>/dev/null | head -1)
mkdir -p /tmp/nt
for w in 128x256 128x256_c2 cublas; do
  if [ $w = cublas ]; then re='regex:nvjet|xmma|cutlass'; tiles=128x256; else re="regex:^gemm_wgmma_bf16_${w}\$"; tiles=$w; fi
  timeout 200 $NCU_BIN -k "$re" -s 3 -c 1 --set full --print-details all --page details \
    /tmp/gx-base/gwb --shape 2048x2048x2048 --bf16 --tiles "$tiles" --reps 5 > /tmp/nt/ncu-$w.txt 2>&1
  echo "== ncu $w 2048^3 rc=$?" | tee -a "$LOG"
  grep -E "^  [a-zA-Z_].*\(.*\)x\(|Duration|SM Frequency  |L1/TEX Cache Throughput|L2 Cache Throughput|DRAM Throughput|Pipe Tensor Cycles Active|Issue Slots Busy|Registers Per Thread|Cluster Size|Elapsed Cycles|SM Active Cycles|smsp__pcsamp_warps_issue_stalled" /tmp/nt/ncu-$w.txt \
    | grep -v " 0$" | awk '!seen[$0]++' | head -45 | cut -c1-170 >> "$LOG"
done
tar -C /tmp/nt -czf "$OUT/ncu.tar.gz" ncu-128x256.txt ncu-128x256_c2.txt ncu-cublas.txt
echo "== checks x (192x192_c2, 192x192, 128x256_c2), every bench shape" >> "$R"
timeout 300 /tmp/gx-x/gwb --no-perf --tiles 192x192_c2,192x192,128x256_c2 >> "$R" 2>&1
echo "checks rc=$? $(grep -cE '^  FAIL' "$R") FAIL lines" | tee -a "$LOG"
for r in $(seq 1 "${ROUNDS:-2}"); do
  echo "== round $r base 2048^3 every tile" >> "$R"
  timeout 120 /tmp/gx-base/gwb --shape 2048x2048x2048 --bf16 --reps 30 >> "$R" 2>&1
  echo "== round $r noma 2048^3" >> "$R"
  timeout 120 /tmp/gx-noma/gwb --shape 2048x2048x2048 --bf16 --reps 30 --tiles 128x256,128x256_c2,128x128,128x128_c2,192x192 >> "$R" 2>&1
  echo "== round $r noma 4096^3" >> "$R"
  timeout 120 /tmp/gx-noma/gwb --shape 4096x4096x4096 --bf16 --reps 30 --tiles 128x256,128x256_c2 >> "$R" 2>&1
  echo "== round $r x squares" >> "$R"
  timeout 200 /tmp/gx-x/gwb --squares --bf16 --reps 30 --tiles 128x256,192x192,192x192_c2,128x256_c2 >> "$R" 2>&1
done
grep -E "^== round|^  [ *] |cuBLAS  |^bf16 " "$R" | head -150 >> "$LOG"
tail -c 9000 "$LOG"
