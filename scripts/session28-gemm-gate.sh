#!/usr/bin/env bash
# Session 28, one fresh machine (repo root, .devbin/ carried), after the 192x192 GEMM tile went
# into kernels/gemm_wgmma.cu (whose source hash every gemm entry carries): FORCED=1 first runs the
# gemm_edges and gemm suites with KERNELGATE_GEMM_TILE=192x192 (every case checked against the
# float64 reference on the new tile, awkward shapes included); QUACK=1 the quack suite (its
# largest cases need more than 78 GiB: why an H200 is asked for); then SUITES (default "default
# gemm gemm_edges") gated through the test binary (scripts/session25-run.sh).
# Under $OUT: log.txt, forced192.tgz, quack.json, gate.tgz.
set -u
export OUT=${OUT:-/tmp/kgout}
if [ "${FORCED:-0}" = 1 ]; then
  (
    DEV_TMP=/tmp/s28f
    . scripts/device-lib.sh
    for s in gemm_edges gemm; do
      ( export KERNELGATE_GEMM_TILE=192x192; cli "forced192-$s" "$s" --backends cuda )
    done
    ( cd "$OUT" && tar czf forced192.tgz forced192-*.json && rm -f forced192-*.json )
  )
fi
if [ "${QUACK:-0}" = 1 ]; then
  ( DEV_TMP=/tmp/s28q; . scripts/device-lib.sh; cli quack quack --backends cuda )
fi
SUITES="${SUITES:-default gemm gemm_edges}" bash scripts/session25-run.sh
