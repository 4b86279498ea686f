#!/usr/bin/env bash
# Session 32, one fresh machine (repo root, .devbin/ carried, nvcc + cuBLAS):
# 1. GATE (unless SUITES=""): the six families session 31's -inf fix restarted (FAMS), in the
#    suites it did not re-run (SUITES, default "norms"), through the CLI against
#    the committed baselines; the bench below builds meanwhile on one core.
# 2. Issue 12, dev bench only (kernels/gemm_wgmma.cu is not edited; no baseline moves): the
#    TMA-store epilogue of kernels/dev/gemm_wgmma_ts.cu (entries *_ts: stmatrix into SW128
#    staging boxes, one tensor store per 64 x 64 box).
#    - checks: the _ts entries on every bench shape, both dtypes (TMA clipping at the edges);
#    - timing: ROUNDS rounds at 2048^3 bf16 and f16 of 128x256, 128x256_ts, 128x256_c2,
#      128x256_c2_ts, 128x128, 128x128_ts (one process each), then the squares BIG in both dtypes,
#      128x256 and 128x256_ts alternating one process each; cuBLAS in the same process each time.
# Under $OUT: log.txt, gate.tgz, ts-bench.txt, ts-build.log.
# Ran at commit 7a913b2 only: the experiment's copy became kernels/gemm_wgmma.cu at 74f1fc0
# (its _ts entries are the bench's 128x256/128x128 rows since), and -DGW_TS_SOURCE is gone.
# scripts/session32-gate.sh and scripts/session32-next2.sh measure the same things at HEAD.
set -u
. scripts/device-lib.sh
CUDA=${CUDA_HOME:-/usr/local/cuda}
NVCC=$CUDA/bin/nvcc
FAMS=${FAMS:-softmax,softmax_bwd,cross_entropy,cross_entropy_bwd,layernorm,rmsnorm_bwd}
R=$OUT/ts-bench.txt
( $NVCC -O3 -std=c++17 -DGW_TS_SOURCE -gencode=arch=compute_90a,code=sm_90a -I kernels -Xptxas -v \
    -o "$DEV_TMP/gwb-ts" kernels/dev/gemm_wgmma_bench.cu -L"$CUDA/lib64" -lcuda -lcublas \
    > "$OUT/ts-build.log" 2>&1; echo "build rc=$?" >> "$OUT/ts-build.log" ) &
for s in ${SUITES-norms}; do cli "gate-$s" "$s" --kernels "$FAMS" --no-progress; done
wait
log "bench build: $(tail -1 "$OUT/ts-build.log"); spills: $(grep -E '[1-9][0-9]* bytes spill stores' "$OUT/ts-build.log" | wc -l)"
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
B=$DEV_TMP/gwb-ts
if [ -x "$B" ]; then
  echo "== checks: _ts entries, every bench shape, both dtypes" >> "$R"
  timeout 300 "$B" --no-perf --tiles 128x256_ts,128x256_c2_ts,128x128_ts >> "$R" 2>&1
  log "checks rc=$? $(grep -cE '^  FAIL' "$R") FAIL lines, $(grep -c 'all configs x splits PASS' "$R") shapes pass"
  T2048=128x256,128x256_ts,128x256_c2,128x256_c2_ts,128x128,128x128_ts
  for r in $(seq 1 "${ROUNDS:-3}"); do
    for dt in bf16 f16; do
      echo "== round $r 2048^3 $dt" >> "$R"
      timeout 120 "$B" --shape 2048x2048x2048 --$dt --reps 40 --tiles $T2048 >> "$R" 2>&1
    done
  done
  # The large squares, one tile per process, alternating (the first H100 round saw 8192^3 _ts at
  # 1363 and 1511-1526 us in different processes, 128x256 at 1400 every time).
  for r in $(seq 1 "${ROUNDS:-3}"); do
    for sh in ${BIG:-4096x4096x4096 6144x6144x6144 8192x8192x8192}; do
      for dt in bf16 f16; do
        for t in 128x256 128x256_ts; do
          echo "== round $r $sh $dt $t" >> "$R"
          timeout 120 "$B" --shape $sh --$dt --reps 15 --tiles $t >> "$R" 2>&1
        done
      done
    done
  done
  grep -E "^== round|^  [ *] .*split 1 |cuBLAS  " "$R" >> "$DEV_LOG"
fi
cd "$OUT" || exit 1
ls gate-*.json > /dev/null 2>&1 && tar czf gate.tgz gate-*.json && rm -f gate-*.json
log "done"
tail -c 6000 "$DEV_LOG"
