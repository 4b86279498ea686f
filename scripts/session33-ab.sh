#!/usr/bin/env bash
# Session 33, dev bench: is 128x256_ts slower with the staging box taken from a running count?
# The gate of the count (commit ed07e33's kernel, every TMA-store tile counting) ran
# gemm::cuda 6144^3 / 8192^3 1-4% above their session 32 baselines while cuBLAS held its own.
# Variants, each its kernel file in a bench_copy: old (362582b, with that commit's bench), cnt
# (the count for every tile), fix (the working tree: the count only for odd box counts).
# 1. SASS of 128x256_ts and 128x128_ts per variant (cuobjdump): instruction counts, and whether
#    fix's equals old's.
# 2. ROUNDS rounds, one process per variant, order reversed each round: 128x256 at 4096^3,
#    6144^3, 8192^3, both dtypes.
# Needs .s33ab/{old,cnt}, untracked copies of the older files, made in the checkout with
#   mkdir -p .s33ab/old .s33ab/cnt
#   git show 362582b:kernels/gemm_wgmma.cu > .s33ab/old/gemm_wgmma.cu
#   git show 362582b:kernels/dev/gemm_wgmma_bench.cu > .s33ab/old/gemm_wgmma_bench.cu
#   git show ed07e33:kernels/gemm_wgmma.cu > .s33ab/cnt/gemm_wgmma.cu
# (the device copies untracked files that git does not ignore). Under $OUT: log.txt,
# ab-bench.txt, ab-table.md, sass.txt, fix-checks.txt (fix's bench checks, every tile and shape).
set -u
. scripts/device-lib.sh
R=$OUT/ab-bench.txt
build() {  # build NAME
  local n=$1 d
  d=$(bench_copy "$n")
  [ -f ".s33ab/$n/gemm_wgmma.cu" ] && cp ".s33ab/$n/gemm_wgmma.cu" "$d/"
  [ -f ".s33ab/$n/gemm_wgmma_bench.cu" ] && cp ".s33ab/$n/gemm_wgmma_bench.cu" "$d/dev/"
  bench_build "$DEV_TMP/gx-$n/gwb" "$DEV_TMP/gx-$n/build.log" "$d"
  bench_note "$n" "$d" "$DEV_TMP/gx-$n/build.log" | tee -a "$DEV_LOG"
  "$CUDA/bin/nvcc" -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I "$d" -cubin \
    -o "$DEV_TMP/gx-$n/g.cubin" "$d/gemm_wgmma.cu"
  for f in gemm_wgmma_bf16_128x256_ts gemm_wgmma_bf16_128x128_ts; do
    "$CUDA/bin/cuobjdump" -sass -fun $f "$DEV_TMP/gx-$n/g.cubin" |
      grep -E '^\s+/\*[0-9a-f]{4}\*/' | sed -E 's|^\s+/\*[0-9a-f]{4}\*/\s+||; s|\s*/\*.*||; s| ;$||' \
      > "$DEV_TMP/gx-$n/$f.sass"
  done
}
build old & build cnt & build fix &
wait
for f in gemm_wgmma_bf16_128x256_ts gemm_wgmma_bf16_128x128_ts; do
  for n in old cnt fix; do
    echo "$f $n: $(wc -l < "$DEV_TMP/gx-$n/$f.sass") instructions, $(grep -c HGMMA "$DEV_TMP/gx-$n/$f.sass") HGMMA"
  done
  cmp -s "$DEV_TMP/gx-old/$f.sass" "$DEV_TMP/gx-fix/$f.sass" && echo "$f: fix == old" || echo "$f: fix != old ($(diff "$DEV_TMP/gx-old/$f.sass" "$DEV_TMP/gx-fix/$f.sass" | grep -c '^[<>]') lines differ)"
  cmp -s "$DEV_TMP/gx-old/$f.sass" "$DEV_TMP/gx-cnt/$f.sass" && echo "$f: cnt == old" || echo "$f: cnt != old ($(diff "$DEV_TMP/gx-old/$f.sass" "$DEV_TMP/gx-cnt/$f.sass" | grep -c '^[<>]') lines differ)"
done | tee "$OUT/sass.txt" | tee -a "$DEV_LOG"
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
bench_checks fix "$DEV_TMP/gx-fix/gwb" "$OUT/fix-checks.txt"
order="old cnt fix"
for r in $(seq 1 "${ROUNDS:-3}"); do
  for sh in 8192x8192x8192 6144x6144x6144 4096x4096x4096; do
    for dt in bf16 f16; do
      for v in $order; do
        echo "== round $r $sh $dt $v" >> "$R"
        timeout 90 "$DEV_TMP/gx-$v/gwb" --shape $sh --$dt --reps 20 --tiles 128x256 >> "$R" 2>&1
      done
    done
  done
  order=$(echo $order | tr ' ' '\n' | tac | paste -sd' ')
done
python3 scripts/ts-table.py "$R" > "$OUT/ab-table.md" 2>&1
grep -E "^\| (4096|6144|8192)" "$OUT/ab-table.md" | tee -a "$DEV_LOG"
log done
