#!/usr/bin/env bash
# Session 36, one machine (repo root, .devbin/ carried): issue 12's ratios with ours and cuBLAS
# timed alike. In a gate run each case keeps its stored entry's batch (launches per sample),
# and those differ between backends of one shape (H100 37a94c4f: 16 of 54 gemm shapes, e.g.
# 5x3000x1000 bf16 ours in graph batches of 2, cuBLAS of 4). Here the gemm suite runs twice
# without baselines, every case at KERNELGATE_BATCH=1 (each launch alone) and then at 4 (graph
# batches of four), and scripts/gemm-table.py tables ours / cuBLAS for each.
# Under $OUT: log.txt, batch1.json, batch4.json, gemm-table-batch1.md, gemm-table-batch4.md.
set -u
. scripts/device-lib.sh
export KERNELGATE_BASELINE_DIR=$DEV_TMP/nobaselines && mkdir -p "$KERNELGATE_BASELINE_DIR"
for b in ${BATCHES:-1 4}; do
  KERNELGATE_BATCH=$b cli "batch$b" gemm --kernels gemm --no-progress
  python3 scripts/gemm-table.py "$OUT/batch$b.json" > "$OUT/gemm-table-batch$b.md" 2>&1
  tail -1 "$OUT/gemm-table-batch$b.md" | tee -a "$DEV_LOG"
done
log done
