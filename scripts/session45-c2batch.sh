#!/usr/bin/env bash
# Session 45 (repo root, .devbin/ carried): 2048^3 through the harness, the plain 128x256 pick
# against the 2-CTA cluster 128x256_c2 forced, each with batches of 1 and of 3 (the gate's),
# ROUNDS (default 2) interleaved rounds, cuBLAS beside, ranked. The dev bench's cold single
# launches had the cluster 2.3% ahead (H200 GPU-8ccc8cb2) where the harness's batches of 3 had it
# 0.8-1.1% behind (session 44): does the batch (PDL between launches) make the difference?
set -u
. scripts/device-lib.sh
mode_env() {
  case $1 in
    p1) echo "KERNELGATE_BATCH=1" ;;
    p3) echo "KERNELGATE_BATCH=3" ;;
    c1) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_TILE=128x256_c2" ;;
    c3) echo "KERNELGATE_BATCH=3 KERNELGATE_GEMM_TILE=128x256_c2" ;;
    c3i) echo "KERNELGATE_BATCH=3 KERNELGATE_GEMM_TILE=128x256_c2 KERNELGATE_GEMM_PDL=inner" ;;
    c30) echo "KERNELGATE_BATCH=3 KERNELGATE_GEMM_TILE=128x256_c2 KERNELGATE_GEMM_PDL=0" ;;
    p30) echo "KERNELGATE_BATCH=3 KERNELGATE_GEMM_PDL=0" ;;
  esac
}
# MODES (default: p1 p3 c1 c3); PDL modes: c3i / c30 (cluster, PDL inner / off), p30 (plain, off)
# shellcheck disable=SC2086 # mode words
interleave c2b scripts/suites/gemm-2048.json ${MODES:-p1 p3 c1 c3}
archive_runs c2b
log done
