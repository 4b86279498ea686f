#!/usr/bin/env bash
# Session 33, one machine (repo root, .devbin/ carried, nvcc + cuBLAS + Nsight Compute).
# Nothing in the product changes.
# 1. Nsight Compute at 2048^3 through the CLI (the product build, ours and the cuBLAS kernel the
#    harness runs): sections SpeedOfLight, WarpStateStats, SchedulerStats, ComputeWorkloadAnalysis
#    and MemoryWorkloadAnalysis, for where our CTAs spend the 2% they live longer.
# 2. The dev bench, base (the checkout's kernels) against last (kernels/dev/gemm_lastbox_patch.py:
#    the CTA's last tile staged whole in the stage ring, no wait between boxes): last's checks on
#    every tile and bench shape, then ROUNDS rounds, one process per variant, order reversed each
#    round: 2048^3 and 4096^3 on 128x256, 3072^3 on 192x192, 1024^3 on 128x64, both dtypes.
# VARIANT=NAME PATCH=FILE time another patch the same way (session 33 ran VARIANT=sus
# PATCH=kernels/dev/gemm_suspend_patch.py NCU_RUN=0 after the default); NCU_RUN=0 skips step 1. The
# 128x256_c2 point at 2048^3 was added for that second run. The default patch applies only to the
# kernel before 5183653 (session 34's overlapped epilogue); the variant is then not built.
# Under $OUT: log.txt, ncu-2048.csv.gz, $VARIANT-checks.txt, $VARIANT-bench.txt, $VARIANT-table.md.
set -u
. scripts/device-lib.sh
V=${VARIANT:-last}
R=$OUT/$V-bench.txt
( bench_variant base & bench_variant "$V" "${PATCH:-kernels/dev/gemm_lastbox_patch.py}" & wait ) &
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
if [ "${NCU_RUN:-1}" = 1 ]; then
  KERNELGATE_SOAK_MS=0 KERNELGATE_BASELINE_DIR=$DEV_TMP/bl timeout 300 "$NCU" -k 'regex:nvjet|gemm_wgmma' -c 40 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --csv --page details \
    $KG run --suite scripts/suites/gemm-2048.json --no-progress --warmup-ms 1 \
    --max-time 5ms --min-samples 3 -o "$DEV_TMP/ncu.json" > "$OUT/ncu-2048.csv" 2>&1
  log "ncu rc=$? $(grep -c '^"' "$OUT/ncu-2048.csv") csv lines"
  gzip -f "$OUT/ncu-2048.csv"
fi
wait
grep "== variant" "$DEV_LOG"
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
bench_checks "$V" "$DEV_TMP/gx-$V/gwb" "$OUT/$V-checks.txt"
order="base $V"
for r in $(seq 1 "${ROUNDS:-3}"); do
  for st in 2048x2048x2048:128x256 2048x2048x2048:128x256_c2 4096x4096x4096:128x256 3072x3072x3072:192x192 1024x1024x1024:128x64; do
    for dt in bf16 f16; do
      for v in $order; do
        echo "== round $r ${st%%:*} $dt $v" >> "$R"
        timeout 60 "$DEV_TMP/gx-$v/gwb" --shape "${st%%:*}" --$dt --reps 30 --tiles "${st##*:}" >> "$R" 2>&1
      done
    done
  done
  order=$(echo $order | tr ' ' '\n' | tac | paste -sd' ')
done
python3 scripts/ts-table.py "$R" > "$OUT/$V-table.md" 2>&1
grep -E "^\| (1024|2048|3072|4096)" "$OUT/$V-table.md" | tee -a "$DEV_LOG"
log done
