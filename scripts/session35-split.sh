#!/usr/bin/env bash
# Session 35, one machine (repo root, .devbin/ carried, nvcc + cuBLAS): the split tail of the
# 128x256_ts overlapped path (kernels/dev/gemm_split_tail_patch.py) against the checkout's kernel.
# 1. Through the harness: scripts/ab-variants.sh with the variants `pairs` (every k16 step as two
#    m64n128k16, the tail's precondition) and `st` (pairs + the CTA's last tile's last STAGES
#    blocks column half by half, boxes 0-1 stored while 2-3 finish), each paired with the
#    checkout in the same runs, ROUNDS rounds, on scripts/suites/st35.json.
# 2. The dev bench's checks of every tile on every bench shape, both dtypes, for both variants
#    (built in the background during 1).
# Under $OUT: log.txt, ab-table.md, ab-runs.tar.gz, pairs-checks.txt, st-checks.txt.
set -u
. scripts/device-lib.sh
P=kernels/dev/gemm_split_tail_patch.py
( bench_variant pairs "$P" pairs; bench_variant st "$P" tail ) > /dev/null 2>&1 &
VARIANTS="pairs:$P+pairs st:$P+tail" SUITE=scripts/suites/st35.json ROUNDS=${ROUNDS:-2} \
  bash scripts/ab-variants.sh > /dev/null
wait
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
for v in pairs st; do
  [ -x "$DEV_TMP/gx-$v/gwb" ] && bench_checks "$v" "$DEV_TMP/gx-$v/gwb" "$OUT/$v-checks.txt"
done
log done
