#!/usr/bin/env bash
# Session 41: per-CTA phase stamps (%globaltimer) of the tensor-core GEMV ring on the small M <= 8
# shapes, beside cuBLAS and the shipped gemm_gemv (kernels/dev/gemv_ring_bench.cu, GRB_TRACE=1).
set -u
. scripts/device-lib.sh
OUT_DIR=$DEV_TMP/grb bash kernels/dev/run_gemv_ring_bench.sh --one 1 1 64 > "$OUT/build-check.txt" 2>&1
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for sh in "5 3000 1000" "8 1024 4096" "1 4096 4096" "3 5000 77"; do
  GRB_FEW=1 GRB_TRACE=1 timeout 120 "$DEV_TMP/grb/grb" --one $sh >> "$OUT/trace.txt" 2>&1
  log "trace $sh rc=$?"
done
