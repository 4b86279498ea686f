#!/usr/bin/env bash
# Session 18: the GEMM suites after the GEMV kernels (M <= 4) and the 128x64 tile in the pick
# (repo root, .devbin/ carried). QUACK=1 first runs the quack suite whole (its largest cases need
# more than 78 GiB: the reason an H200 is asked for). Then the gemm and gemm_edges suites through
# the test binary, gated against the committed baselines (their results are this machine's round
# to import), and DEFAULT=1 the default suite's gemm cases. A table of ours vs cuBLAS.
# Under $OUT: log.txt, results-gemm.json, results-edges.json, gemm-table.md (+ quack.json,
# results-default-gemm.json).
set -u
DEV_TMP=/tmp/s18g
. scripts/device-lib.sh
[ "${QUACK:-0}" = 1 ] && cli quack quack --backends cuda
suite gemm KERNELGATE_SUITE=gemm .devbin/kernels
suite edges KERNELGATE_SUITE=gemm_edges .devbin/kernels
[ "${DEFAULT:-0}" = 1 ] && suite default-gemm .devbin/kernels gemm
python3 scripts/gemm-table.py "$OUT/results-gemm.json" > "$OUT/gemm-table.md" 2>&1
tail -1 "$OUT/gemm-table.md" | tee -a "$DEV_LOG"
