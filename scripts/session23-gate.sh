#!/usr/bin/env bash
# Session 23: one fresh machine's gate evidence and rounds in one device call (repo root,
# .devbin/ carried; .whl/c carried for PEERS).
#   SUITES="quack nsa"  suites run through the gated test binary against the committed baselines
#                       (scripts/session21-rounds.sh): verdicts = gate evidence, results = rounds
#                       to import
#   PEERS="nsa"         then these parts of scripts/peers-device.sh (fla-core / liger from
#                       .whl/c; peers timed in the same run, no baselines)
# Under $OUT: log.txt and bundle.tgz (rounds.tgz's files, the peers' results and reports).
set -u
export OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT"
# The slowdown counters (and the power-cap one) before and after: their units and growth.
Q=clocks_event_reasons_counters.sw_power_cap,clocks_event_reasons_counters.sw_thermal_slowdown,clocks_event_reasons_counters.hw_thermal_slowdown,clocks_event_reasons_counters.hw_power_brake_slowdown,temperature.gpu
counters() { echo "$(date -u +%s.%N) $(nvidia-smi --query-gpu=$Q --format=csv,noheader,nounits 2>&1)" >> "$OUT/counters.txt"; }
counters
SUITES=${SUITES:-"quack nsa"} bash scripts/session21-rounds.sh > /tmp/s23-rounds.txt 2>&1
counters
if [ -n "${PEERS:-}" ]; then
  PARTS="$PEERS" bash scripts/peers-device.sh > "$OUT/peers-out.txt" 2>&1
  tail -40 "$OUT/peers-out.txt"
fi
cd "$OUT" && tar czf bundle.tgz rounds.tgz peers* 2>/dev/null && rm -f rounds.tgz peers*
counters
cat "$OUT/log.txt" "$OUT/counters.txt"
ls -la "$OUT"
