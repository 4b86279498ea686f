#!/usr/bin/env bash
# Session 40, a fresh machine (repo root, .devbin/ carried):
# 1. SUITES (default "gemm_edges gemm") through the test binary against the committed baselines;
#    the fp32 cases whose 64x64 grid leaves SMs idle run the new split-K entries (gemm.cu).
# 2. scripts/suites/fp32split40.json: KERNELGATE_GEMM_FP32_SPLITK=1/2/4/8, interleaved, ranked.
# 3. scripts/suites/mtc40.json: KERNELGATE_GEMM_MTC=0/1 (the tensor-core GEMV experiment), ranked.
# Under $OUT: log.txt, results-*.json, fp32split-rank.md, mtc-rank.md, *-runs.tar.gz.
set -u
. scripts/device-lib.sh
for n in ${SUITES-gemm_edges gemm}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
mode_env() { case $1 in s*) echo "KERNELGATE_GEMM_FP32_SPLITK=${1#s}";; mtc) echo "KERNELGATE_GEMM_MTC=1";; base) echo "KERNELGATE_GEMM_MTC=0";; esac; }
ROUNDS=${ROUNDS:-2} interleave fp32split scripts/suites/fp32split40.json s1 s2 s4 s8
archive_runs fp32split
ROUNDS=${ROUNDS:-2} interleave mtc scripts/suites/mtc40.json base mtc
archive_runs mtc
ls -la "$OUT"
