#!/usr/bin/env bash
# Session 47: held-out check of the 2-CTA B-multicast tiles (_c2) in the pick where B's rows are
# misaligned (N % 64 != 0) and read in place. The shapes: SHAPES_FILE (default
# scripts/session47-c2-tokens-seed47.txt), tokens of `scripts/pick_refit.py c2tokens N SEED`:
# seeded random shapes whose plan the rule changes, each timing the old plan's tile and the new
# one (the seed-48 file also names the tile a rejected variant, at most 3 splits, would take).
# SHAPES, when set, is timed instead. One device call; under $OUT: log.txt, c2val-<dt>.txt.
set -u
. scripts/device-lib.sh
bench_variant base || exit 1
b=$DEV_TMP/gx-base/gwb
SHAPES=${SHAPES:-$(cat "${SHAPES_FILE:-scripts/session47-c2-tokens-seed47.txt}")}
for dt in ${DTS:-bf16 fp16}; do
  [ "$dt" = fp16 ] && flag=f16 || flag=bf16
  # shellcheck disable=SC2086 # the tokens split into words
  DT=$flag REPS=${REPS:-20} bench_shapes "$b" "$OUT/c2val-$dt.txt" "" $SHAPES
done
log done
out_fit
