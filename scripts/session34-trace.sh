#!/usr/bin/env bash
# Session 34, one machine (repo root; nvcc + cuBLAS): where a CTA's time goes. The dev bench
# built with -DGW_TRACE against copies of the kernels patched by kernels/dev/gemm_trace_patch.py
# (per CTA: entry/exit %globaltimer; clock64 at the PDL wait, the first full stage, the last main
# loop's end, the last store's issue and the exit), one build per NAME:PATCH word of VARIANTS
# (PATCH "-": the trace alone; else applied after it; PATCH+ARG+ARG passes the patch arguments). Shapes (SHAPES, SHAPE:TILES words): by
# default 2048^3 on 128x256 and 128x256_c2, 4096^3 on 128x256, 1024^3 on 128x64; DTYPES (default
# "bf16 f16"). The bench's own timing and cuBLAS beside.
# Under $OUT: log.txt, trace-NAME.txt.
set -u
. scripts/device-lib.sh
names=()
for w in ${VARIANTS:-base:-}; do
  n=${w%%:*} p=${w#*:}
  d=$(bench_copy "tr-$n")
  python3 kernels/dev/gemm_trace_patch.py "$d/gemm_wgmma.cu" || { log "trace patch failed"; exit 1; }
  if [ "$p" != - ]; then
    a=""; case $p in *+*) a=${p#*+}; a=${a//+/ } ;; esac
    # shellcheck disable=SC2086 # the patch's arguments, one word each
    python3 "${p%%+*}" "$d/gemm_wgmma.cu" $a || { log "$n: patch $p failed"; continue; }
  fi
  bench_build "$DEV_TMP/gx-tr-$n/gwb" "$DEV_TMP/gx-tr-$n/build.log" "$d" -DGW_TRACE &
  names+=("$n")
done
wait
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
for n in "${names[@]}"; do
  log "trace build $n: $(tail -1 "$DEV_TMP/gx-tr-$n/build.log")"
  R=$OUT/trace-$n.txt
  for dt in ${DTYPES:-bf16 f16}; do
    for st in ${SHAPES:-2048x2048x2048:128x256,128x256_c2 4096x4096x4096:128x256 1024x1024x1024:128x64}; do
      echo "== ${st%%:*} $dt" >> "$R"
      timeout 120 "$DEV_TMP/gx-tr-$n/gwb" ${BENCH_ARGS:-} --shape "${st%%:*}" --$dt --reps 20 --tiles "${st##*:}" >> "$R" 2>&1
      log "$n ${st%%:*} $dt rc=$?"
    done
  done
  grep -E "trace .*split 1 #|cuBLAS  | split 1 " "$R" | sed 's/cycles from entry (median \/ max)/cyc med\/max/' | cut -c1-330 | tee -a "$DEV_LOG"
done
