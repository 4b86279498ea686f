#!/usr/bin/env bash
# Session 45 (repo root, .devbin/ carried): the 8-column tensor-core skinny-N kernel's warp step
# where K > 1024 (scripts/suites/skinny8_45.json): the pick (r1h4 there), r1h4 and r1h8 forced,
# ROUNDS (default 3) interleaved rounds, every launch alone, ranked. Under $OUT: log.txt,
# ntc-rank.md, ntc-runs.tar.gz.
set -u
. scripts/device-lib.sh
mode_env() { pick_or_forced "$1" KERNELGATE_SKINNY_NTC; }
ROUNDS=${ROUNDS:-3} interleave ntc scripts/suites/skinny8_45.json pick r1h4 r1h8
archive_runs ntc
log done
out_fit
