#!/usr/bin/env bash
# Session 23: the throttled verdict end to end on a GPU, and what nvidia-smi costs and offers
# (repo root, .devbin/ carried). The calibration suite's spin kernel stretched 1.5x
# (KERNELGATE_SPIN_SCALE) while KERNELGATE_FAKE_GPU_STATE says "software thermal slowdown":
#   default  -> every spin case `throttled`, the test binary passes;
#   STRICT=1 -> the same cases are regressions and the binary fails;
#   import   -> the throttled records are skipped.
# Then a cool control: the same stretch with no fake state must be 5 regressions.
# Under $OUT: log.txt and throttle.tgz (results files and logs).
set -u
DEV_TMP=/tmp/s23t
. scripts/device-lib.sh
log "nvidia-smi query, three times:"
for i in 1 2 3; do
  t0=$(date +%s%N)
  nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit,clocks_event_reasons.active \
    --format=csv,noheader,nounits 2>&1 | tee -a "$DEV_LOG"
  log "  took $(( ($(date +%s%N) - t0) / 1000000 )) ms"
done
nvidia-smi --help-query-gpu 2>/dev/null | grep -i "counters\." | head -8 | tee -a "$DEV_LOG"
FAKE="840, 1980, 86, 190, 700, 0x20"
suite throttle KERNELGATE_SUITE=calibration KERNELGATE_SPIN_SCALE=1.5 KERNELGATE_FAKE_GPU_STATE="$FAKE" KERNELGATE_COOLDOWN_S=2 .devbin/kernels
grep -E "THROTTLED|WARNING: the GPU" "$DEV_TMP/throttle.log" | head -6 | cut -c1-400 | tee -a "$DEV_LOG"
suite strict KERNELGATE_STRICT=1 KERNELGATE_SUITE=calibration KERNELGATE_SPIN_SCALE=1.5 KERNELGATE_FAKE_GPU_STATE="$FAKE" KERNELGATE_COOLDOWN_S=2 .devbin/kernels
suite cool KERNELGATE_SUITE=calibration KERNELGATE_SPIN_SCALE=1.5 .devbin/kernels
rm -rf /tmp/s23bl && cp -r baselines /tmp/s23bl
KERNELGATE_BASELINE_DIR=/tmp/s23bl $KG import "$OUT/results-throttle.json" 2>&1 | tee -a "$DEV_LOG"
cp "$DEV_TMP"/*.log "$OUT"/ 2>/dev/null
( cd "$OUT" && tar czf throttle.tgz results-*.json *.log && rm -f results-*.json *.log )
