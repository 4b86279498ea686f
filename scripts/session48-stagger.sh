#!/usr/bin/env bash
# Session 48, one machine (repo root; nvcc + cuBLAS there): kernels/dev/gemm_stagger_patch.py,
# the producer's first STAGES loads spaced GW_STAGGER cycles apart, for each spacing in SPACINGS
# (default 0 300 600 900; 0 is the checkout's code, the spin compiled out):
#   1. the per-CTA trace (gemm_trace45_patch.py on top) at 2048^3 bf16 and fp16 and 4096^3 bf16,
#      three launches after a read sweep each, into trace.txt;
#   2. the dev bench (untraced builds), ROUNDS (default 3) interleaved rounds, the same shapes,
#      128x256, cuBLAS beside, into bench-S.txt;
#   3. the checks of the largest spacing's build (every tile, every bench shape, both dtypes).
# Under $OUT: log.txt, trace.txt, bench-*.txt, checks.txt.gz.
set -u
. scripts/device-lib.sh
SP=${SPACINGS:-0 300 600 900}
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
pids=()
for s in $SP; do
  for kind in tr bn; do
    d=$(bench_copy "$kind$s")
    python3 kernels/dev/gemm_stagger_patch.py "$d/gemm_wgmma.cu" || { log "stagger patch failed"; exit 1; }
    defs="-DGW_STAGGER=$s"
    if [ $kind = tr ]; then
      python3 kernels/dev/gemm_trace45_patch.py "$d/gemm_wgmma.cu" || { log "trace patch failed"; exit 1; }
      defs="$defs -DGW_TRACE"
    fi
    # shellcheck disable=SC2086
    bench_build "$DEV_TMP/gx-$kind$s/gwb" "$DEV_TMP/gx-$kind$s/build.log" "$d" $defs &
    pids+=($!)
  done
done
for p in "${pids[@]}"; do wait "$p" || { log "a build failed"; grep -l "rc=[1-9]" "$DEV_TMP"/gx-*/build.log | tee -a "$DEV_LOG"; exit 1; }; done
log "built: $SP"
SHAPES=${SHAPES:-2048x2048x2048:bf16 2048x2048x2048:f16 4096x4096x4096:bf16}
for s in $SP; do
  for t in $SHAPES; do
    echo "== spacing $s $t" >> "$OUT/trace.txt"
    timeout 120 "$DEV_TMP/gx-tr$s/gwb" --read-flush --shape "${t%%:*}" "--${t#*:}" --reps 20 --tiles 128x256 >> "$OUT/trace.txt" 2>&1
  done
  log "traced spacing $s"
done
for r in $(seq 1 "${ROUNDS:-3}"); do
  for s in $SP; do
    for t in $SHAPES; do
      timeout 120 "$DEV_TMP/gx-bn$s/gwb" --read-flush --shape "${t%%:*}" "--${t#*:}" --reps "${REPS:-30}" --tiles 128x256 >> "$OUT/bench-$s.txt" 2>&1
    done
  done
  SP=$(printf '%s\n' $SP | tac | tr '\n' ' ')
  log "round $r"
done
last=$(printf '%s\n' $SP | sort -n | tail -1)
bench_checks "stagger $last" "$DEV_TMP/gx-bn$last/gwb" "$OUT/checks.txt"
gzip -f "$OUT/checks.txt"
grep -E "^== spacing|trace 128x256 split 1 #[12]" "$OUT/trace.txt" | sed -E 's/.*(first stage [0-9]+).*(main loop end [0-9]+).*(exit [0-9]+).*/  \1, \2, \3/' | tee -a "$DEV_LOG"
log done
out_fit
