#!/usr/bin/env bash
# Session 28, one fresh machine (repo root, .devbin/ carried): the nsa_irregular family's first
# GPU runs. First the test binary on KERNELGATE_SUITE=nsa_irregular (automatic kernel choice,
# every case checked against the float64 reference), then the CLI on the same suite with each
# nsa kernel forced (KERNELGATE_NSA_KERNEL=wgmma|grouped|tiled|pairs|local; cases a kernel cannot
# run say why), then SUITES gated through the test binary (scripts/session25-run.sh).
# Under $OUT: log.txt, irregular.tgz (results and logs of the irregular runs), gate.tgz.
set -u
export OUT=${OUT:-/tmp/kgout}
(
  DEV_TMP=/tmp/s28i
  . scripts/device-lib.sh
  suite nsa_irregular KERNELGATE_SUITE=nsa_irregular .devbin/kernels
  for k in wgmma grouped tiled pairs local; do
    ( export KERNELGATE_NSA_KERNEL=$k; cli "irr-$k" nsa_irregular --backends cuda )
    grep -cE "WRONG" "$DEV_TMP/irr-$k.log" | sed "s/^/irr-$k WRONG lines: /" | tee -a "$DEV_LOG"
  done
  cp "$DEV_TMP"/*.log "$OUT"/
  ( cd "$OUT" && tar czf irregular.tgz results-nsa_irregular.json irr-*.json *.log && rm -f results-nsa_irregular.json irr-*.json *.log )
)
if [ -n "${SUITES:-}" ]; then SUITES="$SUITES" bash scripts/session25-run.sh; fi
ls -la "$OUT"
