#!/usr/bin/env bash
# Session 33, diagnosis for the next session (nothing changes): why our 2-CTA cluster tile
# loses to the plain one at 2048^3 while cuBLAS's 1x2 cluster kernel wins. Nsight Compute
# through the CLI on scripts/suites/gemm-2048.json, once with the pick (128x256_ts) and once with
# KERNELGATE_GEMM_TILE=128x256_c2, sections SpeedOfLight, WarpStateStats, SchedulerStats,
# ComputeWorkloadAnalysis and MemoryWorkloadAnalysis, then the warp stall reasons per issued
# instruction (a separate invocation, so that an unknown metric name loses only that part).
# Under $OUT: log.txt, ncu-pick.csv.gz, ncu-c2.csv.gz, ncu-stalls.csv.gz, ncu-stalls-c2.csv.gz.
set -u
. scripts/device-lib.sh
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
prof() {  # prof NAME [VAR=VALUE] -- NCU ARGS...
  local n=$1; shift
  env KERNELGATE_SOAK_MS=0 KERNELGATE_BASELINE_DIR=$DEV_TMP/bl "$@" \
    $KG run --suite scripts/suites/gemm-2048.json --kernels gemm --no-progress --warmup-ms 1 \
    --max-time 5ms --min-samples 3 -o "$DEV_TMP/ncu-$n.json" > "$OUT/ncu-$n.csv" 2>&1
  log "ncu $n rc=$? $(grep -c '^"' "$OUT/ncu-$n.csv") csv lines"
  gzip -f "$OUT/ncu-$n.csv"
}
SEC="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis"
# shellcheck disable=SC2086
prof pick timeout 200 "$NCU" -k 'regex:nvjet|gemm_wgmma' -c 40 $SEC --csv --page details
# shellcheck disable=SC2086
prof c2 KERNELGATE_GEMM_TILE=128x256_c2 timeout 200 "$NCU" -k 'regex:gemm_wgmma' -c 20 $SEC --csv --page details
M=""
for s in barrier branch_resolving dispatch_stall drain imc_miss lg_throttle long_scoreboard math_pipe_throttle membar mio_throttle misc no_instruction not_selected selected short_scoreboard sleeping tex_throttle wait; do
  M="$M${M:+,}smsp__average_warps_issue_stalled_${s}_per_issue_active.ratio"
done
prof stalls timeout 200 "$NCU" -k 'regex:nvjet|gemm_wgmma' -c 40 --metrics "$M,sm__cycles_active.avg,smsp__inst_executed.sum" --csv
prof stalls-c2 KERNELGATE_GEMM_TILE=128x256_c2 timeout 200 "$NCU" -k 'regex:gemm_wgmma' -c 20 --metrics "$M,sm__cycles_active.avg,smsp__inst_executed.sum" --csv
log done
