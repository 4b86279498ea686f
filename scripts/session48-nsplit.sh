#!/usr/bin/env bash
# Session 48, one machine (repo root, .devbin/ carried; nvcc + cuBLAS there):
# kernels/dev/gemm_nsplit_patch.py (`new`: the 256-column tiles' k16 steps as two m64n128
# wgmmas, and the skewed tail finishing the first 128 columns, and storing their boxes, before
# the second half's last blocks) against the checkout's kernels (`old`). (As run on H200
# e97099f7 the change sat in gemm_wgmma.cuh behind a GW_NSPLIT switch and `old` was its
# GW_NSPLIT=0 build, byte for byte the checkout's cubin; the patch reproduces that file.)
#   1. the dev bench's checks of the new build (every tile, every bench shape, both dtypes);
#   2. the dev bench, both builds interleaved ROUNDS times (default 2), TILES (default 128x256
#      and 128x256_c2), on SHAPES (both dtypes), cuBLAS beside;
#   3. the per-CTA trace (gemm_trace45_patch.py) of both builds at 2048^3 and 4096^3.
# The harness A/B of the tail alone is scripts/session48-tail-ab.sh.
# Under $OUT: log.txt, checks.txt.gz, bench-*.txt, trace-*.txt.
set -u
. scripts/device-lib.sh
if [ "${BENCH:-1}" = 1 ]; then
  # NEW_DEFS: -D words for the new build (e.g. -DGW_NSPLIT_MAIN=0: the split tail alone)
  d=$(bench_copy new)
  python3 kernels/dev/gemm_nsplit_patch.py "$d/gemm_wgmma.cu" || { log "nsplit patch failed"; exit 1; }
  # shellcheck disable=SC2086
  bench_build "$DEV_TMP/gx-new/gwb" "$DEV_TMP/gx-new/build.log" "$d" ${NEW_DEFS:-} & p1=$!
  bench_variant old & p2=$!
  wait $p1 || { log "new build failed"; exit 1; }
  bench_note "new ${NEW_DEFS:-}" "$d" "$DEV_TMP/gx-new/build.log" >> "$DEV_LOG"
  grep -h C7511 "$DEV_TMP/gx-new/build.log" | cut -c1-200 | tee -a "$DEV_LOG"
  wait $p2 || exit 1
  bench_checks new "$DEV_TMP/gx-new/gwb" "$OUT/checks.txt"
  gzip -f "$OUT/checks.txt"
  for r in $(seq 1 "${ROUNDS:-2}"); do
    for v in new old; do
      for dt in bf16 f16; do
        # shellcheck disable=SC2086
        DT=$dt REPS=${REPS:-20} bench_shapes "$DEV_TMP/gx-$v/gwb" "$OUT/bench-$v-$dt.txt" "${TILES:-128x256,128x256_c2}" \
          ${SHAPES:-2048x2048x2048 4096x4096x4096 8192x8192x8192 6144x6144x6144 2048x2048x4096 16384x1024x4096}
      done
    done
  done
  # TRACE=0 leaves the traces out (the split tail alone serializes under the trace's registers)
  if [ "${TRACE:-1}" = 1 ]; then
    BATCHES=0 TRACE_TAG=-new TRACE_PATCH=kernels/dev/gemm_nsplit_patch.py bash scripts/session45-trace.sh
    BATCHES=0 TRACE_TAG=-old bash scripts/session45-trace.sh
  fi
fi
log done
out_fit
