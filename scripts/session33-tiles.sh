#!/usr/bin/env bash
# Session 33, one machine (repo root, .devbin/ carried, nvcc + cuBLAS). Nothing in the product
# changes: the candidates are kernels/dev/gemm_s33_patch.py (counter nbuf entries) applied to a
# copy of kernels/gemm_wgmma.cu and built into the dev bench with -DGW_S33.
# 1. Harness (product build, while the bench builds): 2048^3 ours (pick: 128x256_ts) against
#    KERNELGATE_GEMM_TILE=128x256_c2 (B multicast, cuBLAS's traffic per CTA), cuBLAS in every
#    run, ROUNDS interleaved rounds, ranked.
# 2. Bench checks: the TMA-store tiles (the counter moves every one) and the new entries on
#    every bench shape, both dtypes.
# 3. Bench timing, ROUNDS processes per shape, tile order reversed each round: 3072^3 over the
#    192x192 family, 2048^3 / 4096^3 128x256 against 128x256_c2, 1024^3 128x64 against
#    128x64_ts.
# Under $OUT: log.txt, c2-rank.md, c2-runs.tar.gz, tiles-bench.txt, tiles-table.md.
set -u
. scripts/device-lib.sh
R=$OUT/tiles-bench.txt
d=$(bench_copy s33)
python3 kernels/dev/gemm_s33_patch.py "$d/gemm_wgmma.cu" counter nbuf entries || log "patch failed"
B=$DEV_TMP/gx-s33/gwb
( bench_build "$B" "$DEV_TMP/gx-s33/build.log" "$d" -DGW_S33
  bench_note "s33 (counter nbuf entries)" "$d" "$DEV_TMP/gx-s33/build.log" >> "$DEV_LOG" ) &
mode_env() { [ "$1" = c2 ] && echo "KERNELGATE_GEMM_TILE=128x256_c2"; true; }
ROUNDS=${ROUNDS:-3} interleave c2 scripts/suites/gemm-2048.json pick c2
archive_runs c2
wait
tail -1 "$DEV_LOG"
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
NEW=192x192_ts,192x192_c2,192x192_c2_ts,192x192s3_ts,192x192s3_c2_ts
echo "== checks" >> "$R"
timeout 300 "$B" --no-perf --tiles "128x256,128x128,128x256_c2,128x128_c2,128x64_ts,$NEW" >> "$R" 2>&1
log "checks rc=$? $(grep -cE '^  FAIL' "$R") FAIL lines, $(grep -c 'all configs x splits PASS' "$R") shape checks pass"
fwd="192x192,$NEW"
rev=$(echo "$fwd" | tr ',' '\n' | tac | paste -sd,)
for r in $(seq 1 "${ROUNDS:-3}"); do
  for dt in bf16 f16; do
    echo "== round $r 3072 $dt x" >> "$R"
    timeout 90 "$B" --shape 3072x3072x3072 --$dt --reps 30 --tiles "$fwd" >> "$R" 2>&1
    for sh in 2048x2048x2048 4096x4096x4096; do
      echo "== round $r $sh $dt x" >> "$R"
      timeout 60 "$B" --shape $sh --$dt --reps 30 --tiles 128x256,128x256_c2 >> "$R" 2>&1
    done
    echo "== round $r 1024 $dt x" >> "$R"
    timeout 60 "$B" --shape 1024x1024x1024 --$dt --reps 30 --tiles 128x64,128x64_ts >> "$R" 2>&1
  done
  t=$fwd; fwd=$rev; rev=$t
done
python3 scripts/ts-table.py "$R" > "$OUT/tiles-table.md" 2>&1
grep -E "^\| (1024|2048|3072|4096)" "$OUT/tiles-table.md" | tee -a "$DEV_LOG"
log done
