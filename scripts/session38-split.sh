#!/usr/bin/env bash
# (Ran on cfcfff5: the split-KV entries were measured slower and reverted in 0de6543; the
# KERNELGATE_NSA_WGMMA_SPLIT variable it sets exists only in that commit.)
# Session 38, one machine (repo root, .devbin/ carried): the NSA split-KV entries
# (kernels/nsa_wgmma_split.cu) against the whole-tile ones.
# 1. Correctness with the split forced everywhere the wgmma kernel runs (KERNELGATE_NSA_KERNEL=
#    wgmma, KERNELGATE_NSA_WGMMA_SPLIT=1, and =3 on nsa-g1: chunks of several key tiles), over
#    the nsa suite, scripts/suites/nsa-g1.json, nsa_irregular and scripts/suites/nsa-split.json:
#    every case against the float64 reference (timing cut short).
# 2. Timing: scripts/suites/nsa-split.json in interleaved rounds (ROUNDS, default 3) of the
#    automatic choice (`auto`), no split (`off`) and chunks of two key tiles (`2`), ranked.
# Under $OUT: log.txt, split-rank.md, split-runs.tar.gz, forced.tgz, logs.tgz.
set -u
. scripts/device-lib.sh
SPLIT_SUITE=$PWD/scripts/suites/nsa-split.json
(
  export KERNELGATE_NSA_KERNEL=wgmma KERNELGATE_MAX_TIME_MS=150 KERNELGATE_MIN_SAMPLES=5
  KERNELGATE_NSA_WGMMA_SPLIT=1 cli f1-split "$SPLIT_SUITE" --no-progress
  KERNELGATE_NSA_WGMMA_SPLIT=1 cli f1-nsa nsa --backends cuda --no-progress
  KERNELGATE_NSA_WGMMA_SPLIT=1 cli f1-g1 "$PWD/scripts/suites/nsa-g1.json" --no-progress
  KERNELGATE_NSA_WGMMA_SPLIT=3 cli f3-g1 "$PWD/scripts/suites/nsa-g1.json" --no-progress
  KERNELGATE_NSA_WGMMA_SPLIT=1 cli f1-irr nsa_irregular --backends cuda --no-progress
)
( cd "$OUT" && tar czf forced.tgz f*.json && rm -f f*.json )
mode_env() {
  case $1 in
    auto) echo "" ;;
    off) echo "KERNELGATE_NSA_WGMMA_SPLIT=off" ;;
    *) echo "KERNELGATE_NSA_WGMMA_SPLIT=$1" ;;
  esac
}
ROUNDS=${ROUNDS:-3} interleave split "$SPLIT_SUITE" auto off 2
archive_runs split
grep -E "^\|" "$OUT/split-rank.md" | head -40
( cd "$DEV_TMP" && tar czf "$OUT/logs.tgz" *.log )
ls -la "$OUT"
