#!/usr/bin/env bash
# Session 39, fresh machines (repo root, .devbin/ carried): the final in-place C (gemm_wgmma_uc.cu
# with the 2^16-element rule) gated and timed.
# 1. gemm_edges and smoke through the test binary against the committed baselines.
# 2. scripts/suites/uc39.json through the CLI: in place (KERNELGATE_GEMM_DIRECT_C=1, the
#    default) against the padded path (0), ROUNDS interleaved rounds, ranked.
# 3. EXTRA="suite ..." names more test-binary suites to gate (e.g. "gemm default").
# Under $OUT: log.txt, results-*.json, uc-rank.md, uc-runs.tar.gz.
set -u
. scripts/device-lib.sh
for n in gemm_edges smoke ${EXTRA:-}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
mode_env() { case $1 in direct) echo "KERNELGATE_GEMM_DIRECT_C=1";; padded) echo "KERNELGATE_GEMM_DIRECT_C=0";; esac; }
ROUNDS=${ROUNDS:-2} interleave uc scripts/suites/uc39.json direct padded
archive_runs uc
ls -la "$OUT"
