#!/usr/bin/env bash
# Session 41, second device call (repo root, .devbin/ carried):
# 1. kernels/dev/run_gemv_ring_bench.sh: the shipped GEMV, the cp.async-ring variants and cuBLAS
#    on M <= 8 shapes, every launch alone after an L2 flush (gemv-ring.txt);
# 2. scripts/suites/m16tile41.json with the wgmma tile and K split forced (ROUNDS interleaved):
#    does 64x128 at 2-3 splits beat the pick (64x256 x4) at M <= 16 on this GPU? (m16tile-rank.md)
set -u
. scripts/device-lib.sh
log "gemv ring bench"
OUT_DIR=$DEV_TMP/grb bash kernels/dev/run_gemv_ring_bench.sh > "$OUT/gemv-ring.txt" 2>&1
log "gemv ring bench rc=$?"
mode_env() {
  case $1 in
    pick) echo "";;
    a*) echo "KERNELGATE_GEMM_TILE=64x256 KERNELGATE_GEMM_SPLITK=${1#a}";;
    b*) echo "KERNELGATE_GEMM_TILE=64x128 KERNELGATE_GEMM_SPLITK=${1#b}";;
  esac
}
ROUNDS=${ROUNDS:-2} interleave m16tile scripts/suites/m16tile41.json pick a2 a3 b2 b3 b4
archive_runs m16tile
ls -la "$OUT"
