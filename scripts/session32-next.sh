#!/usr/bin/env bash
# Session 32, dev bench only, for the next change to kernels/gemm_wgmma.cu (the product file is
# not edited here; each variant is a sed on a copy, so no baseline moves):
#   base: the product file as committed (TMA-store epilogue, leader waits for every store to
#         complete before the CTA exits: cp.async.bulk.wait_group 0);
#   w:    the leader waits only until the staging boxes have been read (wait_group.read 0, as
#         CUTLASS's epilogue does); the kernel's completion still covers the stores;
#   x:    TMA-store entries for 128x64 and 64x256 too (bench built with -DGW_EXTRA_TS).
# Checks: w's TMA-store tiles and x's new ones on every bench shape, both dtypes. Timing: ROUNDS
# rounds, one process per variant, alternating: base / w at 2048^3 and 4096^3 (bf16, fp16,
# tile 128x256), then x's 128x64 against 128x64_ts at 2048x512x4096, 1024^3, 8192x16x4096.
# Under $OUT: log.txt, next-bench.txt.
set -u
. scripts/device-lib.sh
R=$OUT/next-bench.txt
build() {  # build NAME [SED on gemm_wgmma.cu] [nvcc defines]
  local d
  d=$(bench_copy "$1")
  [ -n "${2:-}" ] && sed -i "$2" "$d/gemm_wgmma.cu"
  # shellcheck disable=SC2086
  bench_build "$DEV_TMP/gx-$1/gwb" "$DEV_TMP/gx-$1/build.log" "$d" ${3:-}
  bench_note "$1" "$d" "$DEV_TMP/gx-$1/build.log" >> "$DEV_LOG"
}
build base &
build w 's/if (TS \&\& leader) bulk_wait_all();/if (TS \&\& leader) bulk_wait_read<0>();/' &
build x 's/^#undef GW_ENTRY_TS$/GW_ENTRY_TS(gemm_wgmma_bf16_128x64_ts, __nv_bfloat16, true, Cfg128x64)\nGW_ENTRY_TS(gemm_wgmma_f16_128x64_ts, __half, false, Cfg128x64)\nGW_ENTRY_TS(gemm_wgmma_bf16_64x256_ts, __nv_bfloat16, true, Cfg64x256)\nGW_ENTRY_TS(gemm_wgmma_f16_64x256_ts, __half, false, Cfg64x256)\n&/' -DGW_EXTRA_TS &
wait
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
B=$DEV_TMP/gx
echo "== checks w (TMA-store tiles)" >> "$R"
timeout 200 $B-w/gwb --no-perf --tiles 128x256,128x128,128x256_c2,128x128_c2 >> "$R" 2>&1
log "checks w rc=$? $(grep -cE '^  FAIL' "$R") FAIL lines so far"
echo "== checks x (128x64_ts, 64x256_ts)" >> "$R"
timeout 200 $B-x/gwb --no-perf --tiles 128x64_ts,64x256_ts >> "$R" 2>&1
log "checks x rc=$? $(grep -cE '^  FAIL' "$R") FAIL lines so far, $(grep -c 'all configs x splits PASS' "$R") shape checks pass"
order="base w"
for r in $(seq 1 "${ROUNDS:-3}"); do
  for sh in 2048x2048x2048 4096x4096x4096; do
    for dt in bf16 f16; do
      for v in $order; do
        echo "== round $r $sh $dt $v" >> "$R"
        timeout 60 $B-$v/gwb --shape $sh --$dt --reps 30 --tiles 128x256 >> "$R" 2>&1
      done
    done
  done
  for sh in 2048x512x4096 1024x1024x1024 8192x16x4096; do
    for dt in bf16 f16; do
      echo "== round $r $sh $dt x" >> "$R"
      timeout 60 $B-x/gwb --shape $sh --$dt --reps 30 --tiles 128x64,128x64_ts >> "$R" 2>&1
    done
  done
  order=$(echo $order | tr ' ' '\n' | tac | paste -sd' ')
done
python3 scripts/ts-table.py "$R" > "$OUT/next-table.md" 2>&1
grep -E "^\| (2048|4096|1024|8192x16)" "$OUT/next-table.md" | head -40 | tee -a "$DEV_LOG"
log done
