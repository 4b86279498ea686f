#!/usr/bin/env bash
# Session 42: the gate on a fresh machine with the committed baselines (repo root, .devbin/
# carried), after the skinny-N change (A's loads with the L2 prefetch-size hint; fp32's common
# step without a break between B's rows). BENCH=1 first runs the skinny-N bench's fp32 shape (the
# shipped kernel against the bench's copy). SUITES default: gemm gemm_edges smoke default.
set -u
. scripts/device-lib.sh
if [ "${BENCH:-0}" = 1 ]; then
  bash kernels/dev/run_skinny_n_bench.sh 32 > "$OUT/snb32.txt" 2>&1
  grep -E "cublas|shipped|skn" "$OUT/snb32.txt"
fi
for n in ${SUITES-gemm gemm_edges smoke default}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
