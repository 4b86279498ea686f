#!/usr/bin/env bash
# Session 27, one machine (repo root, .devbin/ carried): the wgmma nsa kernel's 64-token tiles
# (`_bm64` entries: one consumer warpgroup, two CTAs an SM) against its 128-token tiles, both
# forced, ROUNDS (default 2) interleaved rounds of the nsa suite (every case checked; d128 and
# windowed cases report why they cannot run with 64), ranked; then the 64-token tiles forced on
# scripts/suites/nsa-g1.json (44 more G = 1 shapes, checked).
# Under $OUT: log.txt, rows-rank.md, rows-runs.tar.gz, g1-64.json.
set -u
DEV_TMP=/tmp/s27r
. scripts/device-lib.sh
mode_env() {
  case $1 in
    w128) echo "KERNELGATE_NSA_KERNEL=wgmma KERNELGATE_NSA_WGMMA_ROWS=128" ;;
    w64) echo "KERNELGATE_NSA_KERNEL=wgmma KERNELGATE_NSA_WGMMA_ROWS=64" ;;
  esac
}
ROUNDS=${ROUNDS:-2} interleave rows nsa w128 w64
archive_runs rows
( export KERNELGATE_NSA_KERNEL=wgmma KERNELGATE_NSA_WGMMA_ROWS=64; cli g1-64 scripts/suites/nsa-g1.json )
grep -E "passed|WRONG|FAILED" "$DEV_TMP/g1-64.log" | head -5 | tee -a "$DEV_LOG"
ls "$OUT" | tee -a "$DEV_LOG"
