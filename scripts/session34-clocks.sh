#!/usr/bin/env bash
# Session 34, one machine (repo root; nvcc + cuBLAS): does cuBLAS run the same squares at a higher
# SM clock or lower power than our kernel? The dev bench's --sustain (the pick, then cuBLAS,
# twice, back to back with the read flush before each launch, SUSTAIN_MS each) at 2048^3 and
# 4096^3 in both dtypes, with nvidia-smi sampling SM clock, power and temperature every 50 ms;
# scripts/clock-windows.py averages the samples of each window (its first 300 ms left out).
# Under $OUT: log.txt, sustain.txt, smi.csv, clocks.md.
set -u
. scripts/device-lib.sh
bench_build "$DEV_TMP/gwb" "$DEV_TMP/build.log" kernels
log "bench build: $(tail -1 "$DEV_TMP/build.log")"
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 50 > "$OUT/smi.csv" 2>&1 &
SMI=$!
for sh in 2048x2048x2048 4096x4096x4096; do
  for dt in bf16 f16; do
    echo "== $sh $dt" >> "$OUT/sustain.txt"
    timeout 120 "$DEV_TMP/gwb" --read-flush --sustain "${SUSTAIN_MS:-1500}" --shape $sh --$dt --reps 20 \
      --tiles 128x256 >> "$OUT/sustain.txt" 2>&1
    log "$sh $dt rc=$?"
  done
done
kill $SMI
python3 scripts/clock-windows.py "$OUT/sustain.txt" "$OUT/smi.csv" | tee "$OUT/clocks.md" | tee -a "$DEV_LOG"
