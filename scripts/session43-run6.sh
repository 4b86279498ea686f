#!/usr/bin/env bash
# Session 43, sixth call: the gate (SUITES, default gemm gemm_edges smoke) on a fresh machine
# after the session's imports; then the misaligned-B rule as committed against the copy it
# replaces (KERNELGATE_GEMM_MISALIGNED_B=copy) on the 128x128 plans
# (scripts/suites/mis128_43.json), two interleaved rounds.
set -u
. scripts/device-lib.sh
for n in ${SUITES-gemm gemm_edges smoke}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
mode_env() {
  case $1 in
    rule) echo "KERNELGATE_BATCH=1" ;;
    copy) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_MISALIGNED_B=copy" ;;
  esac
}
interleave r128 scripts/suites/mis128_43.json rule copy
archive_runs r128
