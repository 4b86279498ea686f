#!/usr/bin/env bash
# Session 43, second call: the gate (SUITES, default gemm smoke) on a fresh machine after the
# first call's import; then B's misaligned rows on the B-multicast cluster tile
# (scripts/suites/c2mis43.json): the automatic plan (auto), 128x256_c2 reading B in place
# (c2off) and 128x256_c2 after the alignment copy (c2copy), two interleaved rounds.
set -u
. scripts/device-lib.sh
for n in ${SUITES-gemm smoke}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
mode_env() {
  case $1 in
    auto) echo "KERNELGATE_BATCH=1" ;;
    c2off) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_TILE=128x256_c2 KERNELGATE_GEMM_ALIGN=off" ;;
    c2copy) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_TILE=128x256_c2" ;;
    plainoff) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_TILE=128x256 KERNELGATE_GEMM_ALIGN=off" ;;
  esac
}
interleave c2 scripts/suites/c2mis43.json auto c2off c2copy plainoff
archive_runs c2
