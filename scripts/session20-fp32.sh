#!/usr/bin/env bash
# Session 20 (repo root, .devbin/ carried): the fp32 GEMM cases after the 128x128 SIMT tile went to
# BK 16 / 2 stages (kernels/gemm.cu; every gemm.cu baseline entry restarts with the new source
# hash). QUACK=1 first runs the quack suite whole (its largest cases need more than 78 GiB: the
# reason an H200 is asked for). Then:
#   1. scripts/suites/gemm-fp32.json, ours beside cuBLAS (fp32, no TF32 on either side);
#   2. the fp32 cases of the gemm and default suites (gemm_edges has none) through the test binary, gated
#      against the committed baselines (their results are this machine's round to import).
# Under $OUT: log.txt, fp32.json, results-gemm-fp32.json,
# results-default-fp32.json (+ quack.json).
set -u
DEV_TMP=/tmp/s20f
. scripts/device-lib.sh
[ "${QUACK:-0}" = 1 ] && cli quack quack --backends cuda
cli fp32 scripts/suites/gemm-fp32.json --backends cublas,cuda
suite gemm-fp32 KERNELGATE_SUITE=gemm .devbin/kernels fp32

suite default-fp32 KERNELGATE_SUITE=default .devbin/kernels fp32
ls "$OUT" | tee -a "$DEV_LOG"
