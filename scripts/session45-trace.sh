#!/usr/bin/env bash
# Session 45, one machine (repo root, .devbin/ carried; nvcc + cuBLAS there): where a 2048^3 CTA's
# time goes with session 44's kernel. The dev bench built with -DGW_TRACE against a copy of the
# kernels patched by kernels/dev/gemm_trace45_patch.py (per CTA: entry/exit %globaltimer; clock64
# at the PDL wait, the first full stage, the last warpgroup's last wgmma, its last store's issue
# and the exit), three cold launches per dtype after a read flush, cuBLAS timed beside; then the
# harness on 2048^3 with batches of 1 and of 3 (the gate's), ours and cuBLAS, two rounds each:
# how much of the batched time is launch and completion, and whether our ratio moves with it.
# TILES (default 128x256) picks the traced tiles (the bench's --tiles). TRACE_DEFS="-DNAME=V ..." builds the traced bench with switches set, TRACE_TAG names its file
# (trace$TRACE_TAG.txt), BATCHES=0 leaves the harness part out.
# Under $OUT: log.txt, trace.txt, b1-*.json, b3-*.json.
set -u
. scripts/device-lib.sh
d=$(bench_copy tr)
# TRACE_PATCH: a dev patch applied to the copy before the trace patch (a variant traced)
if [ -n "${TRACE_PATCH:-}" ]; then
  python3 "$TRACE_PATCH" "$d/gemm_wgmma.cu" || { log "patch $TRACE_PATCH failed"; exit 1; }
fi
python3 kernels/dev/gemm_trace45_patch.py "$d/gemm_wgmma.cu" || { log "trace patch failed"; exit 1; }
# shellcheck disable=SC2086 # TRACE_DEFS: extra -D words (a switch of gemm_wgmma.cuh)
bench_build "$DEV_TMP/gx-tr/gwb" "$DEV_TMP/gx-tr/build.log" "$d" -DGW_TRACE ${TRACE_DEFS:-}
log "trace build: $(tail -1 "$DEV_TMP/gx-tr/build.log")"
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/trace${TRACE_TAG:-}.txt
for dt in bf16 f16; do
  for st in ${SHAPES:-2048x2048x2048 4096x4096x4096}; do
    echo "== $st $dt" >> "$R"
    timeout 120 "$DEV_TMP/gx-tr/gwb" --read-flush --shape "$st" --$dt --reps 20 --tiles "${TILES:-128x256}" >> "$R" 2>&1
    log "trace $st $dt rc=$?"
  done
done
grep -E "trace |stamps|cuBLAS  | split 1 " "$R" | cut -c1-400 | tee -a "$DEV_LOG"
if [ "${BATCHES:-1}" = 1 ]; then
  mode_env() { echo "KERNELGATE_BATCH=${1#b}"; }
  interleave b2048 scripts/suites/gemm-2048.json b1 b3
fi
log done
out_fit
