#!/usr/bin/env bash
# Session 45 (repo root, .devbin/ carried): scripts/suites/longk2_45.json (the shapes a 590 ns
# K-block cost for 128x192 would move off it) with 128x192, 192x192, 128x128 and 128x256 forced,
# every launch alone, ROUNDS (default 2) interleaved rounds, ranked. Under $OUT: log.txt,
# tiles2-rank.md, tiles2-runs.tar.gz.
set -u
. scripts/device-lib.sh
mode_env() { pick_or_forced "$1" KERNELGATE_GEMM_TILE; }
ROUNDS=${ROUNDS:-2} interleave tiles2 scripts/suites/longk2_45.json 128x192 192x192 128x128 128x256
archive_runs tiles2
log done
out_fit
