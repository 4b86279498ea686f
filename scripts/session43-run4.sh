#!/usr/bin/env bash
# Session 43, fourth call: the 128x128 plans with misaligned B (scripts/suites/mis128_43.json)
# against 128x128_c2 reading B in place, two interleaved rounds; then the gate (SUITES, default
# gemm gemm_edges smoke) of the misaligned-B rule as committed.
set -u
. scripts/device-lib.sh
mode_env() {
  case $1 in
    plan) echo "KERNELGATE_BATCH=1" ;;
    c2s) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_TILE=128x128_c2 KERNELGATE_GEMM_ALIGN=off" ;;
  esac
}
interleave m128 scripts/suites/mis128_43.json plan c2s
archive_runs m128
for n in ${SUITES-gemm gemm_edges smoke}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
