#!/usr/bin/env bash
# Session 48, one machine (repo root; nvcc + cuBLAS there): the 64-row cluster tiles of
# kernels/dev/gemm_c2small_patch.py (64x128_c2, 64x128s8_c2, 64x256_c2 and the 8-stage 64x128s8
# control) beside every tile the pick weighs, on the mid-size shapes where cuBLAS leads us
# (session 47's list) and a few squares, both dtypes, cuBLAS beside; first the dev bench's checks
# of the patched build (every tile, the new ones included, every bench shape, both dtypes).
# Under $OUT: log.txt, checks.txt.gz, c2s-bf16.txt, c2s-f16.txt.
set -u
. scripts/device-lib.sh
bench_variant cs kernels/dev/gemm_c2small_patch.py || exit 1
b=$DEV_TMP/gx-cs/gwb
# CHECKS=0 leaves the checks out (the H100 3401ddf5 run from session48-noise.sh)
if [ "${CHECKS:-1}" = 1 ]; then
  bench_checks cs "$b" "$OUT/checks.txt"
  gzip -f "$OUT/checks.txt"
fi
for dt in ${DTS:-bf16 f16}; do
  # shellcheck disable=SC2086
  DT=$dt REPS=${REPS:-20} bench_shapes "$b" "$OUT/c2s-$dt.txt" \
    "${TILES:-64x128,128x64,128x128,128x192,128x256,64x256,128x64_n2,128x128_n2,128x128_c2,64x128s8,64x128_c2,64x128s8_c2,64x256_c2}" \
    ${SHAPES:-2304x640x2048 2304x640x4096 3000x768x3072 768x3072x1536 768x512x1536 512x384x1024 1792x3000x6144 768x3000x3072 1024x3000x2048 2304x3000x2048 4608x1024x12288 2048x512x4096 1024x1024x1024 1000x1000x1000 2048x2048x2048}
done
log done
out_fit
