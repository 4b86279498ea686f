#!/usr/bin/env bash
# Session 40, a fresh machine (repo root, .devbin/ carried):
# 1. SUITES (default "gemm_edges gemm smoke") through the test binary against the committed
#    baselines, with the fp32 split rule (pick_fp32_splits).
# 2. scripts/suites/wgsplit40.json: KERNELGATE_GEMM_SPLITK=1/2/3/4 on the wgmma path, ranked.
# 3. scripts/suites/fp32split40.json: KERNELGATE_GEMM_FP32_SPLITK=1/2/4/8, ranked.
# Under $OUT: log.txt, results-*.json, wgsplit-rank.md, fp32split-rank.md, *-runs.tar.gz.
set -u
. scripts/device-lib.sh
for n in ${SUITES-gemm_edges gemm smoke}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
mode_env() { case $1 in k*) echo "KERNELGATE_GEMM_SPLITK=${1#k}";; s*) echo "KERNELGATE_GEMM_FP32_SPLITK=${1#s}";; esac; }
ROUNDS=${ROUNDS:-2} interleave wgsplit scripts/suites/wgsplit40.json k1 k2 k3 k4
archive_runs wgsplit
if [ -z "${NO_FP32:-}" ]; then
  ROUNDS=${ROUNDS:-2} interleave fp32split scripts/suites/fp32split40.json s1 s2 s4 s8
  archive_runs fp32split
fi
ls -la "$OUT"
