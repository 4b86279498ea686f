#!/usr/bin/env bash
# Session 43, first call: the gate (SUITES, default gemm gemm_edges smoke) on a fresh machine with
# the committed baselines; then what misaligned rows cost (scripts/suites/align43.json, B's
# alignment copy on and off, two interleaved rounds, every launch alone) and the cuBLAS kernels
# torch picks for those shapes.
set -u
. scripts/device-lib.sh
for n in ${SUITES-gemm gemm_edges smoke}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
mode_env() { case $1 in copy) echo "KERNELGATE_BATCH=1" ;; nocopy) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_ALIGN=off" ;; esac; }
interleave al scripts/suites/align43.json copy nocopy
archive_runs al
timeout 120 python3 scripts/cublas-names.py 4096x1000x4096 4096x1024x4096 4096x4096x1000 1000x1000x1000 1024x1024x1024 1000x1000x100 2048x512x4096 2048x2048x2048 3072x3072x3072 > "$OUT/cublas-names.txt" 2>&1
log "cublas names rc=$?"
grep -v "^$" "$OUT/cublas-names.txt" | cut -c1-200 | head -60
