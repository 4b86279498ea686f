#!/usr/bin/env bash
# Session 47: held-out check of the 2-CTA B-multicast tiles (_c2) in the pick where B's rows are
# misaligned (N % 64 != 0) and read in place. The 40 shapes: seeded random (seed 47; M 128-8191,
# N 136-8192 not a multiple of 64, K 64-8192; shapes the harness would copy B for, M >= 2048 and
# K >= 256, left out) whose plan changes when the cost model may take 128x256_c2 / 128x128_c2
# (scripts/pick_refit.py's port). Each token times the old plan's tile and the new one.
# SHAPES_FILE: tokens read from a file instead (scripts/session47-c2-tokens-seed48.txt: seed 48,
# 30 shapes whose plan changes with the _c2 tiles in the pick, or with them at most 3 splits).
# One device call; under $OUT: log.txt, c2val-<dt>.txt.
set -u
. scripts/device-lib.sh
bench_variant base || exit 1
b=$DEV_TMP/gx-base/gwb
[ -n "${SHAPES_FILE:-}" ] && SHAPES="${SHAPES:-} $(cat "$SHAPES_FILE")"
for dt in ${DTS:-bf16 fp16}; do
  [ "$dt" = fp16 ] && flag=f16 || flag=bf16
  # shellcheck disable=SC2086
  DT=$flag REPS=${REPS:-20} bench_shapes "$b" "$OUT/c2val-$dt.txt" "" ${SHAPES:-948x1272x5480:192x192,128x256_c2 5376x1392x192:128x256,128x256_c2 1901x5032x5744:128x256,128x256_c2 963x7016x7624:128x256,128x256_c2 386x3800x904:128x128,128x128_c2 986x3360x3280:192x192,128x256_c2 1260x3088x1288:192x192,128x256_c2 1295x6760x472:128x192,128x256_c2 979x240x7104:128x128,128x128_c2 5366x2728x96:128x256,128x256_c2 201x6224x4048:128x256,128x128_c2 1013x6816x728:128x256,128x256_c2 710x5216x104:128x256,128x256_c2 1667x5512x712:128x256,128x256_c2 795x4056x432:128x256,128x256_c2 197x992x7232:128x128,128x128_c2 458x1624x5376:128x192,128x128_c2 658x560x6800:128x192,128x128_c2 505x7304x3648:128x256,128x256_c2 997x5904x1688:128x192,128x256_c2 223x7072x1272:128x128,128x128_c2 1171x936x6848:128x256,128x256_c2 1197x5328x104:128x256,128x256_c2 662x560x4720:128x64_n2,128x128_c2 1399x2168x3288:128x256,128x256_c2 7404x224x184:128x128,128x128_c2 1843x8032x224:128x256,128x256_c2 1369x5016x904:128x256,128x256_c2 419x984x3208:128x64_n2,128x128_c2 982x3976x1200:128x256,128x256_c2 195x5048x1568:128x128,128x128_c2 7193x2104x144:128x256,128x256_c2 1218x3472x208:128x192,128x256_c2 2619x6040x160:128x256,128x256_c2 1253x1240x224:128x128,128x128_c2 1501x5048x5272:128x256,128x256_c2 183x1888x4480:128x128,128x128_c2 2739x3472x224:128x256,128x256_c2 786x8040x1232:128x256,128x256_c2 1605x1096x5016:192x192,128x128_c2}
done
log done
out_fit
