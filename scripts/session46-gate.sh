#!/usr/bin/env bash
# Session 46, a fresh machine (repo root, .devbin/ carried): the gate after 128x192 took its
# TMA-store entry (kernels/gemm_wgmma.cu, session 46). The gemm suite unless GEMM=0, with EDGES=1
# gemm_edges (its 8191x264x128 cases run the new entry and restart; every other entry kept its
# rounds by machine code) and with DEFAULT=1 the README's main command (the default suite); then,
# unless CHECKS=0, the dev bench's checks of every tile on every bench shape in both dtypes, and with SWEEP=1 the 50-shape
# tile sweep (scripts/session46-sweep.sh, bf16). Under $OUT: log.txt, results-*.json.gz,
# checks.txt.gz, sweep-bf16.txt.gz.
set -u
. scripts/device-lib.sh
[ "${GEMM:-1}" = 1 ] && suite gemm KERNELGATE_SUITE=gemm .devbin/kernels
[ "${EDGES:-0}" = 1 ] && suite gemm_edges KERNELGATE_SUITE=gemm_edges .devbin/kernels
[ "${DEFAULT:-0}" = 1 ] && suite default .devbin/kernels
( cd "$OUT" && gzip -9 -n results-*.json )
if [ "${CHECKS:-1}" = 1 ]; then
  bench_variant base && bench_checks base "$DEV_TMP/gx-base/gwb" "$OUT/checks.txt"
  gzip -9 -n "$OUT/checks.txt"
fi
if [ "${SWEEP:-0}" = 1 ]; then
  bash scripts/session46-sweep.sh
  gzip -9 -n "$OUT"/sweep-*.txt
fi
log done
out_fit
