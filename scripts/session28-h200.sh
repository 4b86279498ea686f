#!/usr/bin/env bash
# Session 28, one fresh machine (repo root, .devbin/ carried): QUACK=1 runs the quack suite first
# (its largest cases need more than 78 GiB: why an H200 is asked for), then ROUNDS (default 2)
# runs of scripts/suites/nsa-g1-dense.json (the nsa G = 1 cases below 60 nominal TFLOP/s beside
# dense causal attention of the same size, ours and torch SDPA), then SUITES gated through the
# test binary (scripts/session25-run.sh).
# Under $OUT: log.txt, quack.json, dense.tgz, gate.tgz.
set -u
export OUT=${OUT:-/tmp/kgout}
if [ "${QUACK:-0}" = 1 ]; then
  ( DEV_TMP=/tmp/s28q; . scripts/device-lib.sh; cli quack quack --backends cuda )
fi
(
  DEV_TMP=/tmp/s28d
  . scripts/device-lib.sh
  for r in $(seq 1 "${ROUNDS:-2}"); do cli "dense-$r" scripts/suites/nsa-g1-dense.json; done
  python3 scripts/nsa-dense-table.py "$OUT"/dense-*.json | tee -a "$DEV_LOG"
  ( cd "$OUT" && tar czf dense.tgz dense-*.json && rm -f dense-*.json )
)
if [ -n "${SUITES:-}" ]; then SUITES="$SUITES" bash scripts/session25-run.sh; fi
ls -la "$OUT"
