#!/usr/bin/env bash
# Session 20, last device runs (repo root, .devbin/ carried). QUACK=1 first runs the quack suite
# whole (its largest cases need more than 78 GiB: the reason an H200 is asked for). Then:
#   1. FP32=1: the fp32 GEMM cases gated (scripts/session20-fp32.sh without the quack suite);
#   2. the nsa suite through the test binary, gated against the committed baselines (the G = 1
#      cases the pairs kernel now takes restart; their results are this machine's round);
#   3. LONG=1: scripts/suites/nsa-long.json, tiled against pairs, one round each, ranked.
# Under $OUT: log.txt, results-nsa.json, nsalong-rank.md (+ quack.json and the fp32 files).
set -u
DEV_TMP=/tmp/s20z
. scripts/device-lib.sh
[ "${QUACK:-0}" = 1 ] && cli quack quack --backends cuda
[ "${FP32:-0}" = 1 ] && QUACK=0 bash scripts/session20-fp32.sh
suite nsa KERNELGATE_SUITE=nsa .devbin/kernels
mode_env() { echo "KERNELGATE_NSA_KERNEL=$1"; }
if [ "${LONG:-0}" = 1 ]; then
  ROUNDS=1 interleave nsalong scripts/suites/nsa-long.json tiled pairs
  archive_runs nsalong
fi
ls "$OUT" | tee -a "$DEV_LOG"
