#!/usr/bin/env bash
# Session 42: the reworked tensor-core skinny-N kernel through the harness. The skinny-N shapes
# with N > 8 and M >= 2048 on the wgmma tiles (default) against the streaming kernel
# (KERNELGATE_SKINNY_WGMMA=0; MODES may add r2h2, KERNELGATE_SKINNY_NTC=r2h2), every launch
# alone, two interleaved rounds; then the gate
# (SUITES, default gemm gemm_edges smoke) against the committed baselines.
set -u
. scripts/device-lib.sh
nvidia-smi --query-gpu=name,uuid --format=csv,noheader
mode_env() {
  case $1 in
    wgmma) echo "KERNELGATE_BATCH=1";;
    stream) echo "KERNELGATE_BATCH=1 KERNELGATE_SKINNY_WGMMA=0";;
    r2h2) echo "KERNELGATE_BATCH=1 KERNELGATE_SKINNY_WGMMA=0 KERNELGATE_SKINNY_NTC=r2h2";;
  esac
}
ROUNDS=${ROUNDS:-2} interleave skn scripts/suites/skinnyn42.json ${MODES:-wgmma stream}
archive_runs skn
grep -E "^\|" "$OUT/skn-rank.md" | head -60
for n in ${SUITES-gemm gemm_edges smoke}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
