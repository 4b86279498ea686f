#!/usr/bin/env bash
# Session 27, one machine (repo root, .devbin/ carried): the new Hopper nsa kernel
# (kernels/nsa_wgmma.cu) forced on the whole nsa suite (every case checked against the float64
# reference; cases it cannot run report why), then ROUNDS (default 2) interleaved rounds of the
# automatic choice against the forced wgmma kernel, ranked (`kernelgate rank`).
# Under $OUT: log.txt, check.json, nsa-rank.md, nsa-runs.tar.gz.
set -u
DEV_TMP=/tmp/s27n
. scripts/device-lib.sh
mode_env() {
  case $1 in
    auto) echo "" ;;
    wgmma) echo "KERNELGATE_NSA_KERNEL=wgmma" ;;
  esac
}
( export KERNELGATE_NSA_KERNEL=wgmma; cli check nsa )
grep -E "passed|WRONG|error|cannot" "$DEV_TMP/check.log" | head -30 | cut -c1-240 | tee -a "$DEV_LOG"
ROUNDS=${ROUNDS:-2} interleave nsa nsa auto wgmma
archive_runs nsa
ls "$OUT" | tee -a "$DEV_LOG"
