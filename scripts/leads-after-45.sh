#!/usr/bin/env bash
# Session 45's lead, one device call (repo root, .devbin/ carried, nvcc + cuBLAS there): a 128x192
# TMA-store tile on 128x256_ts's overlapped epilogue and skewed tail
# (kernels/dev/gemm_128x192_ts_patch.py, compiled here without spills or serialization, never
# run). Why: 192x192_ts ran 5.7-6.7% faster than the pick's 128x192 (register epilogue) on five
# long-K shapes, and the cost model cannot tell them apart (docs/kernels/session45/README.md §4).
# 1. The dev bench built on a patched copy: its checks of every tile (the new `128x192_ts` row
#    among them) on every bench shape, both dtypes (a wrong result fails there first).
# 2. The bench timing 128x192, 128x192_ts and 192x192 on SHAPES (default: five long-K shapes where
#    192x192 wins and two where 128x192 does), both dtypes, cuBLAS beside.
# If 128x192_ts closes the gap, the next step is its host entry (src/backend/cuda/gemm_wgmma.rs:
# 128x192 with_tma_store) and a gate on both models. Under $OUT: log.txt, t192ts-checks.txt,
# t192ts-bench.txt.
set -u
. scripts/device-lib.sh
bench_variant t192ts kernels/dev/gemm_128x192_ts_patch.py || { log "build failed"; exit 1; }
b=$DEV_TMP/gx-t192ts/gwb
bench_checks t192ts "$b" "$OUT/t192ts-checks.txt"
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
for st in ${SHAPES:-3072x3072x8192 1536x6144x8192 2304x4096x8192 6144x3072x8192 3072x3072x16384 2304x2304x8192 3072x2048x8192}; do
  for dt in bf16 f16; do
    timeout 120 "$b" --read-flush --shape "$st" --$dt --reps 20 --tiles 128x192,128x192_ts,192x192 >> "$OUT/t192ts-bench.txt" 2>&1
    log "bench $st $dt rc=$?"
  done
done
grep -E "^(bf16|f16) " "$OUT/t192ts-bench.txt" | tee -a "$DEV_LOG"
grep -E "^  [* ] " "$OUT/t192ts-bench.txt" | cut -c1-120 | tee -a "$DEV_LOG"
log done
