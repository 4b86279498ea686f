#!/usr/bin/env bash
# Session 48, one machine (repo root, .devbin/ carried): how much a reading of ours / cuBLAS moves
# from one process to the next at 2048^3 and 4096^3. RUNS (default 10) separate `kernelgate run`s
# of SUITE (default scripts/suites/sq-2048-4096.json, ours and cuBLAS, bf16 and fp16), each with
# its own buffers and its own module loads, as the gate's readings are; then one table of every
# run's times and ratios (noise-table.md). C2S=1 adds the 64-row tiles of
# kernels/dev/gemm_c2small_patch.py in the dev bench on C2S_SHAPES (c2s-*.txt).
# Under $OUT: log.txt, noise-table.md, noise-runs.tar.gz (and c2s-bf16.txt, c2s-f16.txt).
set -u
. scripts/device-lib.sh
S=${SUITE:-scripts/suites/sq-2048-4096.json}
for r in $(seq 1 "${RUNS:-10}"); do
  cli "noise-$r" "$S" --no-progress
done
python3 scripts/noise_table.py "$OUT" | tee "$OUT/noise-table.md" | tail -12 | tee -a "$DEV_LOG"
( cd "$OUT" && tar czf noise-runs.tar.gz noise-*.json && rm -f noise-*.json )
if [ "${C2S:-0}" = 1 ]; then
  CHECKS=0 TILES=64x128,128x64,128x128,128x64_n2,128x128_n2,128x128_c2,64x128s8,64x128_c2,64x128s8_c2 \
    SHAPES="${C2S_SHAPES:-2048x512x4096 1024x1024x1024 768x512x1536 2304x640x2048 1000x1000x1000 4096x512x4096 2048x256x8192 1536x768x4096}" \
    REPS=20 bash scripts/session48-c2small.sh
fi
log done
out_fit
