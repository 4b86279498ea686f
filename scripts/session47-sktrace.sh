#!/usr/bin/env bash
# Session 47: why the stream-K rows (kernels/dev/gemm_streamk_patch.py) run slower than the plain
# tile even under one wave of tiles. One device call (repo root, nvcc + cuBLAS there): a bench
# copy with the stream-K patch and its trace (kernels/dev/gemm_sktrace_patch.py), built with
# -DGW_TRACE, timed on SHAPES with the plain 128x128 / 128x256 and the _sk rows at three grids:
# the default (one CTA per SM), SK_GRID=tiles (one CTA per tile: every segment whole, the plain
# work through the stream-K path) and SK_GRID=66 (half the SMs). Under $OUT: log.txt and
# sktrace-<grid>.txt (the bench's rows and per-CTA timelines).
set -u
. scripts/device-lib.sh
d=$(bench_copy skt)
(cd kernels/dev && python3 gemm_streamk_patch.py "$d/gemm_wgmma.cu" && python3 gemm_sktrace_patch.py "$d/gemm_wgmma.cu") \
  || { log "patch failed"; exit 1; }
bench_build "$DEV_TMP/gx-skt/gwb" "$DEV_TMP/gx-skt/build.log" "$d" -DGW_TRACE || { tail -5 "$DEV_TMP/gx-skt/build.log" | tee -a "$DEV_LOG"; exit 1; }
log "built"
for g in default tiles 66; do
  f=$OUT/sktrace-$g.txt
  if [ "$g" = default ]; then unset SK_GRID; else export SK_GRID=$g; fi
  # shellcheck disable=SC2086
  REPS=${REPS:-20} bench_shapes "$DEV_TMP/gx-skt/gwb" "$f" "128x128,128x256,128x128_sk,128x256_sk" \
    ${SHAPES:-2304x640x2048 3000x768x3072 2048x2048x2048}
  grep -E "^  [* ] .*_sk|^  [* ] 128x(128|256) split 1 |^    cuBLAS|^== bf16|trace .*_sk" "$f" | cut -c1-330 | tee -a "$DEV_LOG" > /dev/null
done
unset SK_GRID
log done
out_fit
