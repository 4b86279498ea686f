#!/usr/bin/env bash
# Session 43, fifth call: the gate (SUITES, default gemm gemm_edges smoke) on a fresh machine
# after the imports of H100 6589fe08 and H200 702f6684, with the misaligned-B rule as committed;
# then the 128x192 plans with misaligned B (scripts/suites/mis192_43.json) against both
# clusters reading B in place, two interleaved rounds.
set -u
. scripts/device-lib.sh
for n in ${SUITES-gemm gemm_edges smoke}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
mode_env() {
  case $1 in
    plan) echo "KERNELGATE_BATCH=1" ;;
    w) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_TILE=128x256_c2 KERNELGATE_GEMM_ALIGN=off" ;;
    n) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_TILE=128x128_c2 KERNELGATE_GEMM_ALIGN=off" ;;
  esac
}
interleave m192 scripts/suites/mis192_43.json plan w n
archive_runs m192
