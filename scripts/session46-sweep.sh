#!/usr/bin/env bash
# Session 46: how far the tile pick is from the best tile on shapes it was not fitted to. The dev
# bench, built on the checkout's kernels (or, with PATCH=FILE, on a copy patched by it: the first
# run used kernels/dev/gemm_128x192_ts_patch.py before that tile shipped), times every tile of
# the pick and every split count it allows (bench splits_for) on SHAPES (default: 44 seeded random
# shapes plus six measured before), DT (default bf16), L2 read-flushed, each config checked
# against the fp32 reference first. Under $OUT: log.txt, sweep-$DT.txt (the bench's output;
# `scripts/pick_refit.py table` reads it).
set -u
. scripts/device-lib.sh
bench_variant sweep ${PATCH:-} || { log "build failed"; exit 1; }
b=$DEV_TMP/gx-sweep/gwb
TILES=${TILES:-128x256,128x128,64x256,64x128,128x192,128x192_regs,128x64,128x64_n2,192x192}
DT=${DT:-bf16}
# shellcheck disable=SC2086 # the shape list splits into tokens
bench_shapes "$b" "$OUT/sweep-$DT.txt" "$TILES" ${SHAPES:-512x384x1024 512x1152x1536 512x1536x256 512x2304x2048 512x3000x1536 512x4608x6144 640x2304x16384 640x3000x256 768x512x1536 768x2560x8192 768x3000x3072 768x3072x1536 1000x3000x256 1024x1000x4096 1024x2048x4096 1024x2560x8192 1024x3000x2048 1024x6144x256 1792x1000x512 1792x3000x6144 1792x4608x3072 2048x2048x8192 2304x640x2048 2304x640x4096 2304x3000x2048 2304x3584x4096 2304x4608x6144 2560x640x512 2560x640x12288 2560x1152x512 3000x768x3072 3000x2048x4096 3072x5120x256 4096x2560x1024 4096x3000x1024 4096x3584x512 4608x1000x12288 5120x512x256 5120x1152x512 5120x2048x8192 6144x384x8192 6144x1536x12288 6144x6144x1024 6144x6144x1536 3072x3072x8192 2304x2304x8192 2048x2048x2048 3072x3072x3072 4096x4096x4096 8192x1024x8192}
log done
