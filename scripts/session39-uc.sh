#!/usr/bin/env bash
# Session 39, one machine (repo root, .devbin/ carried): C written in place for N not a multiple
# of 8 (kernels/gemm_wgmma_uc.cu).
# 1. gemm_edges and smoke through the test binary against the committed baselines (every case
#    checked; the `_uc` cases run new code).
# 2. scripts/suites/uc39.json through the CLI, KERNELGATE_GEMM_DIRECT_C=1 (in place) against 0
#    (padded result and copy), ROUNDS interleaved rounds, ranked.
# Under $OUT: log.txt, results-*.json, uc-rank.md, uc-runs.tar.gz.
set -u
. scripts/device-lib.sh
for n in gemm_edges smoke; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
mode_env() { case $1 in direct) echo "KERNELGATE_GEMM_DIRECT_C=1";; padded) echo "KERNELGATE_GEMM_DIRECT_C=0";; d128) echo "KERNELGATE_GEMM_DIRECT_C=1 KERNELGATE_GEMM_TILE=128x128";; regs) echo "KERNELGATE_GEMM_DIRECT_C=1 KERNELGATE_GEMM_EPILOGUE=regs";; esac; }
ROUNDS=${ROUNDS:-2} interleave uc scripts/suites/uc39.json ${MODES:-direct padded}
archive_runs uc
ls -la "$OUT"
