#!/usr/bin/env bash
# Session 34, one machine (repo root, .devbin/ not needed; nvcc + cuBLAS): where a CTA's time
# goes at 2048^3. The dev bench built with -DGW_TRACE against a copy of the kernels patched by
# kernels/dev/gemm_trace_patch.py (per-CTA entry/exit %globaltimer, clock64 at the PDL wait, the
# first full stage, the last main loop's end and the exit): 2048^3 on 128x256 and 128x256_c2,
# 4096^3 on 128x256, 1024^3 on 128x64, both dtypes; the bench's own timing and cuBLAS beside.
# Under $OUT: log.txt, trace.txt.
set -u
. scripts/device-lib.sh
d=$(bench_copy trace)
python3 kernels/dev/gemm_trace_patch.py "$d/gemm_wgmma.cu" || { log "patch failed"; exit 1; }
bench_build "$DEV_TMP/gx-trace/gwb" "$DEV_TMP/gx-trace/build.log" "$d" -DGW_TRACE
log "trace build: $(tail -1 "$DEV_TMP/gx-trace/build.log")"
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/trace.txt
for dt in bf16 f16; do
  for st in 2048x2048x2048:128x256,128x256_c2 4096x4096x4096:128x256 1024x1024x1024:128x64; do
    echo "== ${st%%:*} $dt" >> "$R"
    timeout 120 "$DEV_TMP/gx-trace/gwb" --shape "${st%%:*}" --$dt --reps 20 --tiles "${st##*:}" >> "$R" 2>&1
    log "${st%%:*} $dt rc=$?"
  done
done
grep -E "trace|cuBLAS  |128x" "$R" | cut -c1-400 | head -60 | tee -a "$DEV_LOG"
