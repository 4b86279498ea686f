#!/usr/bin/env bash
# The leads session 43 left, ready for a device call (repo root, .devbin/ carried):
# 1. 2048x512x4096 on the automatic tile against 128x64_n2 (scripts/suites/g2048x512_43.json),
#    each timed with its stored entry's batch, three interleaved rounds: on an H200 the pairs ran
#    17.6 against 20.0 us in graphs of two in session 24, the way the H200 gate times ours there.
# 2. The 128x192 plans with misaligned B against both clusters reading B in place
#    (scripts/suites/mis192_43.json), two rounds: one H200 (64e499a3) so far.
# SUITES (default: none) runs gate suites first.
set -u
. scripts/device-lib.sh
for n in ${SUITES-}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
mode_env() {
  case $1 in
    pick) echo "" ;;
    n2) echo "KERNELGATE_GEMM_TILE=128x64_n2" ;;
    plan) echo "KERNELGATE_BATCH=1" ;;
    w) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_TILE=128x256_c2 KERNELGATE_GEMM_ALIGN=off" ;;
    n) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_TILE=128x128_c2 KERNELGATE_GEMM_ALIGN=off" ;;
  esac
}
ROUNDS=3 interleave g512 scripts/suites/g2048x512_43.json pick n2
archive_runs g512
interleave m192 scripts/suites/mis192_43.json plan w n
archive_runs m192
