#!/usr/bin/env bash
# Session 47: issue 12's two shapes outside every suite (scripts/suites/issue12-extra.json),
# the current plans ("new") against KERNELGATE_GEMM_MISALIGNED_B=copy ("old"), interleaved
# rounds on one machine, every launch alone, cuBLAS in every run. Repo root, .devbin/ carried.
# Under $OUT: log.txt, x12-rank.md, x12-runs.tar.gz.
set -u
. scripts/device-lib.sh
mode_env() {
  case $1 in
    new) echo "KERNELGATE_BATCH=1" ;;
    old) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_MISALIGNED_B=copy" ;;
  esac
}
ROUNDS=${ROUNDS:-2} interleave x12 scripts/suites/issue12-extra.json new old
archive_runs x12
log done
out_fit
