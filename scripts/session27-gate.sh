#!/usr/bin/env bash
# Session 27, one fresh machine (repo root, .devbin/ carried; .whl/c too with PARTS): QUACK=1
# first runs the quack suite (its largest cases need more than 78 GiB: why an H200 is asked
# for), PARTS (e.g. "nsa") runs those parts of the peers suite (scripts/peers-device.sh: our
# kernels beside fla and torch), then SUITES are gated through the test binary against the
# committed baselines (scripts/session25-run.sh).
# Under $OUT: log.txt, quack.json, peers-*.json, peers.md, peers.csv, gate.tgz.
set -u
export OUT=${OUT:-/tmp/kgout}
if [ "${QUACK:-0}" = 1 ]; then
  ( DEV_TMP=/tmp/s27q; . scripts/device-lib.sh; cli quack quack --backends cuda )
fi
if [ -n "${PARTS:-}" ]; then
  PARTS="$PARTS" bash scripts/peers-device.sh > "$OUT/peers-stdout.txt" 2>&1
  tail -30 "$OUT/peers-stdout.txt" >> "$OUT/log.txt"; rm -f "$OUT/peers-stdout.txt"
fi
SUITES="${SUITES:-nsa mha}" bash scripts/session25-run.sh
