#!/usr/bin/env bash
# Session 47: the 2-CTA multicast tiles on the mid-size shapes where we are furthest behind
# cuBLAS. Why: the stream-K trace (scripts/session47-sktrace.sh, H200 71145b83) showed the L2 ->
# SM traffic capping those shapes: 132 CTAs moved the K blocks no faster than 90. A cluster that
# multicasts the shared operand cuts that traffic by a quarter (128x128) or a third (128x256).
# One device call (repo root, nvcc + cuBLAS there): the checkout's dev bench (no patch), every
# plain tile and the _c2 / _n2 cluster tiles, on SHAPES, DTS (default bf16 fp16), cuBLAS beside.
# Under $OUT: log.txt, mcast-<dt>.txt.
set -u
. scripts/device-lib.sh
bench_variant base || exit 1
b=$DEV_TMP/gx-base/gwb
for dt in ${DTS:-bf16 fp16}; do
  f=$OUT/mcast-$dt.txt
  [ "$dt" = fp16 ] && flag=f16 || flag=bf16
  # shellcheck disable=SC2086
  DT=$flag REPS=${REPS:-20} bench_shapes "$b" "$f" "128x256,128x192,128x128,64x128,128x64,192x192,128x256_c2,128x128_c2,128x64_n2,128x128_n2" \
    ${SHAPES:-2304x640x2048 2304x640x4096 3000x768x3072 768x3072x1536 768x512x1536 512x384x1024 1792x3000x6144 768x3000x3072 1024x3000x2048 2304x3000x2048 4608x1024x12288 2048x512x4096 1000x1000x1000 2048x2048x2048 4096x4096x4096}
done
log done
out_fit
