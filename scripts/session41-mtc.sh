#!/usr/bin/env bash
# Session 41: the rewritten tensor-core GEMV (kernels/gemm_mtc.cu) on a fresh machine (repo root,
# .devbin/ carried):
# 1. scripts/suites/mtc41.json under KERNELGATE_GEMM_MTC=0 / unset / 1, every launch alone
#    (KERNELGATE_BATCH=1, like for like), ROUNDS interleaved: correctness on awkward shapes and the
#    A/B (mtc-rank.md);
# 2. the test binary on SUITES (default: gemm gemm_edges smoke) with the committed baselines: the
#    gate, and results to import (5x3000x1000 now runs gemm_mtc: its entries restart).
set -u
. scripts/device-lib.sh
mode_env() {
  case $1 in
    off) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_MTC=0";;
    rule) echo "KERNELGATE_BATCH=1";;
    all) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_MTC=1";;
  esac
}
ROUNDS=${ROUNDS:-2} interleave mtc scripts/suites/mtc41.json off rule all
archive_runs mtc
for n in ${SUITES-gemm gemm_edges smoke}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
ls -la "$OUT"
