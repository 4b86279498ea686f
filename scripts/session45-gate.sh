#!/usr/bin/env bash
# Session 45, a fresh machine (repo root, .devbin/ carried): the gate of the gemm suite (the
# skinny-N pick's new configuration at 8192x8x8192 gets this machine's rounds), with DEFAULT=1
# the README's main command (the default suite) too, and with C2TRACE=1 the 2048^3 dev-bench
# trace of the plain and the cluster 128x256 tiles (scripts/session45-trace.sh).
set -u
. scripts/device-lib.sh
suite gemm KERNELGATE_SUITE=gemm .devbin/kernels
[ "${DEFAULT:-0}" = 1 ] && suite default .devbin/kernels
( cd "$OUT" && gzip -9 -n results-*.json )
if [ "${C2TRACE:-0}" = 1 ]; then
  BATCHES=0 TRACE_TAG=-c2 SHAPES=2048x2048x2048 TILES=128x256,128x256_c2 bash scripts/session45-trace.sh
fi
log done
out_fit
