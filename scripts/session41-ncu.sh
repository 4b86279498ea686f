#!/usr/bin/env bash
# Session 41: where the microseconds of the small M <= 8 GEMVs go. Builds the GEMV ring bench,
# then profiles one shape's kernels (cuBLAS's, the shipped gemm_gemv, the SIMT and tensor-core
# rings) under Nsight Compute: launch geometry, duration, DRAM throughput, stall reasons.
# Under $OUT: ncu-<shape>.txt (details), ncu-<shape>.csv (raw), bench log.
set -u
. scripts/device-lib.sh
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
log "ncu: ${NCU:-none}"
OUT_DIR=$DEV_TMP/grb bash kernels/dev/run_gemv_ring_bench.sh --one 1 1 64 > "$OUT/build-check.txt" 2>&1
BIN=$DEV_TMP/grb/grb
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for sh in "5 3000 1000" "1 4096 4096"; do
  tag=$(echo "$sh" | tr ' ' x)
  GRB_FEW=1 GRB_REPS=1 timeout 240 "$NCU" --target-processes all -k 'regex:^(?!flush_read)' \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section SchedulerStats \
    "$BIN" --one $sh > "$OUT/ncu-$tag.txt" 2>&1
  log "ncu $tag rc=$?"
done
ls -la "$OUT"
