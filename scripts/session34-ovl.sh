#!/usr/bin/env bash
# Session 34, one machine (repo root; nvcc + cuBLAS): the dev bench, base (the checkout's
# kernels) against VARIANT (default ovl) built with PATCH. Session 34 ran it with
# PATCH=kernels/dev/gemm_overlap_epi_patch.py as of 0017438 (the 128x256 TMA-store tile storing a
# finished tile during the next one's first K blocks; shipped in 5183653, the script removed
# since: `git show 0017438:kernels/dev/gemm_overlap_epi_patch.py`). VARIANT's checks
# on every bench shape and tile, then ROUNDS rounds (order turned each round) of the squares
# 2048^3-8192^3 on 128x256 and 3072^3 on 192x192 (unchanged: a control), both dtypes, after the
# harness's read sweep. Under $OUT: log.txt, $VARIANT-checks.txt, $VARIANT-bench.txt,
# $VARIANT-table.md.
set -u
. scripts/device-lib.sh
V=${VARIANT:-ovl}
R=$OUT/$V-bench.txt
P=${PATCH:?PATCH=FILE: the patch to time}
bench_variant base & bench_variant "$V" "$P" & wait
grep "== variant" "$DEV_LOG"
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
bench_checks "$V" "$DEV_TMP/gx-$V/gwb" "$OUT/$V-checks.txt"
order="base $V"
for r in $(seq 1 "${ROUNDS:-3}"); do
  for st in 2048x2048x2048:128x256 4096x4096x4096:128x256 6144x6144x6144:128x256 8192x8192x8192:128x256 3072x3072x3072:192x192; do
    for dt in bf16 f16; do
      for v in $order; do
        echo "== round $r ${st%%:*} $dt $v" >> "$R"
        timeout 60 "$DEV_TMP/gx-$v/gwb" --read-flush --shape "${st%%:*}" --$dt --reps 20 --tiles "${st##*:}" >> "$R" 2>&1
      done
    done
  done
  order=$(echo $order | tr ' ' '\n' | tac | paste -sd' ')
done
python3 scripts/ts-table.py "$R" > "$OUT/$V-table.md" 2>&1
grep -E "^\| [0-9]" "$OUT/$V-table.md" | tee -a "$DEV_LOG"
log done
