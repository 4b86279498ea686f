#!/usr/bin/env bash
# Session 32, dev bench only (the product kernels/gemm_wgmma.cu is not edited: each variant is
# kernels/dev/gemm_ts_next_patch.py applied to a copy, so no baseline moves):
#   base: the product file; p: prefetch C's tensor map at kernel start; c: staging boxes by a
#   running counter, plus 128x64_ts / 64x256_ts entries; pc: both.
# Checks: c and pc, the TMA-store tiles (128x256, 128x128, 128x64_ts, 64x256_ts) on every bench
# shape, both dtypes (8192x8192x8 is the shape where 128x64_ts went wrong before the counter).
# Timing: ROUNDS rounds, one process per variant, alternating: 128x256 at 2048^3 and 4096^3
# (base, p, pc), then 128x64 against 128x64_ts (c) at 1024^3 and 8192x8192x8.
# Under $OUT: log.txt, next2-bench.txt, next2-table.md.
set -u
. scripts/device-lib.sh
R=$OUT/next2-bench.txt
build() {  # build NAME [patch modes...]
  local n=$1 d defs=""
  shift
  d=$(bench_copy "$n")
  [ $# -gt 0 ] && python3 kernels/dev/gemm_ts_next_patch.py "$d/gemm_wgmma.cu" "$@"
  case " $* " in *" entries "*) defs=-DGW_EXTRA_TS ;; esac
  # shellcheck disable=SC2086
  bench_build "$DEV_TMP/gx-$n/gwb" "$DEV_TMP/gx-$n/build.log" "$d" $defs
  bench_note "$n ($*)" "$d" "$DEV_TMP/gx-$n/build.log" | tee -a "$DEV_LOG"
}
build base &
build p prefetch &
build c counter entries &
build pc prefetch counter entries &
wait
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
B=$DEV_TMP/gx
for v in c pc; do
  echo "== checks $v" >> "$R"
  timeout 200 $B-$v/gwb --no-perf --tiles 128x256,128x128,128x64_ts,64x256_ts >> "$R" 2>&1
  log "checks $v rc=$? $(grep -cE '^  FAIL' "$R") FAIL lines so far, $(grep -c 'all configs x splits PASS' "$R") shape checks pass so far"
done
order="base p pc"
for r in $(seq 1 "${ROUNDS:-3}"); do
  for sh in 2048x2048x2048 4096x4096x4096; do
    for dt in bf16 f16; do
      for v in $order; do
        echo "== round $r $sh $dt $v" >> "$R"
        timeout 60 $B-$v/gwb --shape $sh --$dt --reps 30 --tiles 128x256 >> "$R" 2>&1
      done
    done
  done
  for sh in 1024x1024x1024 8192x8192x8; do
    for dt in bf16 f16; do
      echo "== round $r $sh $dt x" >> "$R"
      timeout 60 $B-c/gwb --shape $sh --$dt --reps 30 --tiles 128x64,128x64_ts >> "$R" 2>&1
    done
  done
  order=$(echo $order | tr ' ' '\n' | tac | paste -sd' ')
done
python3 scripts/ts-table.py "$R" > "$OUT/next2-table.md" 2>&1
grep -E "^\| (2048|4096|1024|8192)" "$OUT/next2-table.md" | tee -a "$DEV_LOG"
log done
