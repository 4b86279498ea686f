#!/usr/bin/env bash
# Prepared in session 19 for the next device session (not yet run). Repo root, .devbin/ carried.
#   1. SGEMM=1: kernels/dev/run_sgemm_bench.sh --quick: the shipped fp32 128x128 entry (BK 8,
#      3 stages) beside the bench's BK 16 / 2-stage configuration of the same template (session
#      7 read it 0.84-0.85x cuBLAS at 2048^3 and 4096^3 against 0.80-0.81x shipped), checked
#      against float64 in the same process.
#   2. PDL=1: scripts/suites/pdl-2048x512.json under KERNELGATE_GEMM_PDL=inner and =all,
#      interleaved ROUNDS (default 3) times and ranked: does `all` lose only at 2048x512x4096
#      bf16, and on this GPU model?
#   (Nsight Compute serializes launches, so it cannot show the overlap itself; the ranks can.)
#   3. MTC=1: scripts/suites/gemv.json (M <= 8) with KERNELGATE_GEMM_MTC=1 (the tensor-core
#      experiment of kernels/gemm_mtc.cu, never run before) against the default, interleaved
#      and ranked; every case is checked against float64 by the harness in both modes.
# Under $OUT: log.txt, sgemm.txt, pdl-rank.md, pdl-runs.tar.gz, mtc-rank.md, mtc-runs.tar.gz.
set -u
DEV_TMP=/tmp/s20
. scripts/device-lib.sh
if [ "${SGEMM:-1}" = 1 ]; then
  bash kernels/dev/run_sgemm_bench.sh --quick > "$OUT/sgemm.txt" 2>&1
  log "sgemm bench rc=$?: $(tail -1 "$OUT/sgemm.txt")"
fi
if [ "${PDL:-1}" = 1 ]; then
  mode_env() { echo "KERNELGATE_GEMM_PDL=$1"; }
  ROUNDS=${ROUNDS:-3} interleave pdl scripts/suites/pdl-2048x512.json inner all
  archive_runs pdl
fi
if [ "${MTC:-1}" = 1 ]; then
  mode_env() { [ "$1" = mtc ] && echo "KERNELGATE_GEMM_MTC=1"; }
  interleave mtc scripts/suites/gemv.json default mtc
  grep -iE "wrong|error" "$DEV_TMP"/mtc-*.log | head -10 | tee -a "$DEV_LOG"
  archive_runs mtc
fi
ls "$OUT" | tee -a "$DEV_LOG"
