#!/usr/bin/env bash
# Session 48, a fresh machine (repo root, .devbin/ carried): the duty-cycle hold from 100 us
# (timing::DUTY_MIN_SAMPLE_US, was 250). First RUNS (default 8) separate runs of
# scripts/suites/gemm-4096.json under it (scripts/session48-noise.sh: does our 4096^3 still land
# in a slow state in some processes?), then the gate on SUITES (default: gemm), whose results
# are imported as rounds (the cases of 100-250 us samples restart on them).
# Under $OUT: log.txt, noise-table.md, noise-runs.tar.gz, results-*.json.gz.
set -u
. scripts/device-lib.sh
SUITE=scripts/suites/gemm-4096.json RUNS=${RUNS:-8} bash scripts/session48-noise.sh
for s in ${SUITES:-gemm}; do
  suite "$s" KERNELGATE_SUITE="$s" .devbin/kernels
done
( cd "$OUT" && gzip -9 -n results-*.json )
log done
out_fit
