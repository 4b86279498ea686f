#!/usr/bin/env bash
# Session 47: the pick's B-multicast clusters (m_pairs_in_pick) through the harness, against the
# plans before it (KERNELGATE_GEMM_MISALIGNED_B=copy), interleaved rounds on one machine (every
# launch alone), both dtypes, cuBLAS in every run. SUITE (default scripts/suites/c2pick47.json)
# and PREFIX (default c2h) name the suite and the files. Repo root, .devbin/ carried. Under
# $OUT: log.txt, PREFIX-rank.md, PREFIX-runs.tar.gz.
set -u
. scripts/device-lib.sh
mode_env() {
  case $1 in
    new) echo "KERNELGATE_BATCH=1" ;;
    old) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_MISALIGNED_B=copy" ;;
  esac
}
p=${PREFIX:-c2h}
ROUNDS=${ROUNDS:-2} interleave "$p" "${SUITE:-scripts/suites/c2pick47.json}" new old
archive_runs "$p"
log done
out_fit
