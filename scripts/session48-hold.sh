#!/usr/bin/env bash
# Session 48, one machine (repo root, .devbin/ carried): does the hold in front of each sample
# move our 2048^3/4096^3 readings? Below 250 us a sample keeps the enqueue-driven hold (3x the
# host's enqueue time): about 25-50 us for our launches, 160-340 us for a cublasGemmEx call, so
# at 4096^3 (about 180 us) ours ran at 80-90% duty cycle and cuBLAS at 35-55% (session 48's noise
# runs). ROUNDS (default 6) rounds of two separate `kernelgate run`s of SUITE (default
# scripts/suites/sq-2048-4096.json): `d` with the default policy, `h` with KERNELGATE_HOLD_US=HOLD
# (default 400: both backends held alike), the order swapped each round.
# Under $OUT: log.txt, hold-d-table.md, hold-h-table.md, hold-runs.tar.gz.
set -u
. scripts/device-lib.sh
S=${SUITE:-scripts/suites/sq-2048-4096.json}
modes="d h"
for r in $(seq 1 "${ROUNDS:-6}"); do
  for m in $modes; do
    if [ "$m" = h ]; then
      KERNELGATE_HOLD_US=${HOLD:-400} cli "hold$m-$r" "$S" --no-progress
    else
      cli "hold$m-$r" "$S" --no-progress
    fi
  done
  modes=$(printf '%s\n' $modes | tac | tr '\n' ' ')
done
for m in d h; do
  python3 scripts/noise_table.py "$OUT" "hold$m" > "$OUT/hold-$m-table.md"
  echo "== $m" | tee -a "$DEV_LOG"; tail -5 "$OUT/hold-$m-table.md" | tee -a "$DEV_LOG"
done
( cd "$OUT" && tar czf hold-runs.tar.gz hold?-*.json && rm -f hold?-*.json )
log done
out_fit
