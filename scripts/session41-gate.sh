#!/usr/bin/env bash
# Session 41: the gate on a fresh machine with the committed baselines (repo root, .devbin/
# carried): the README's main command (the default suite), then gemm and smoke, through the
# test binary. gemm_mtc now runs 5x3000x1000 and 1x4096x4096 (16-bit) by default.
set -u
. scripts/device-lib.sh
for n in ${SUITES-default gemm smoke}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
ls -la "$OUT"
