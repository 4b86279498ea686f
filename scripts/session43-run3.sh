#!/usr/bin/env bash
# Session 43, third call: the misaligned-B rule (128x256_c2 reading B in place where the plan is
# an unsplit 128x256 or 192x192 tile and N % 64 != 0) against the copy it replaces
# (KERNELGATE_GEMM_MISALIGNED_B=copy) and 128x128_c2 in place (for the 128x128 plans), on
# scripts/suites/c2mis43.json, two interleaved rounds; then the gate (SUITES, default gemm
# gemm_edges smoke).
set -u
. scripts/device-lib.sh
mode_env() {
  case $1 in
    rule) echo "KERNELGATE_BATCH=1" ;;
    copy) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_MISALIGNED_B=copy" ;;
    c2s) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_TILE=128x128_c2 KERNELGATE_GEMM_ALIGN=off" ;;
  esac
}
interleave mb scripts/suites/c2mis43.json rule copy c2s
archive_runs mb
for n in ${SUITES-gemm gemm_edges smoke}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
