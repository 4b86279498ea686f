#!/usr/bin/env bash
# One fresh-machine pass of everything a closing note reports, from the repo root with .devbin/
# carried (scripts/build-device.sh): the default suite gated against the committed baselines
# and appended onto them (scripts/gate-evidence.sh base-append), then the harness tables of the
# kernels under work (scripts/kernels-check.sh PARTS, default "gemm bars rows").
# Everything that must come back is under $OUT: log.txt, results-*.json, baselines.tar (this
# GPU model's baselines with this machine's rounds added) and check.tgz (the harness tables'
# results and logs).
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT"
t0=$(date +%s)
APPENDS=${APPENDS:-1} bash scripts/gate-evidence.sh base-append > /dev/null 2>&1
echo "== gate-evidence base-append: $(( $(date +%s) - t0 )) s" >> "$OUT/log.txt"
PARTS=${PARTS:-gemm bars rows} bash scripts/kernels-check.sh > /dev/null 2>&1
echo "== total $(( $(date +%s) - t0 )) s" >> "$OUT/log.txt"
