#!/usr/bin/env bash
# Session 18: the new wgmma tiles (128x64, and 2-CTA clusters paired along N that multicast A:
# 128x64_n2, 128x128_n2) forced on the few-tile shapes of scripts/suites/tiles.json against the
# automatic pick, cuBLAS in every run, MODES interleaved ROUNDS times, then ranked; and every
# new tile forced on fixtures/gemm_edges.json (odd M/N/K, partial tiles) for correctness.
# Under $OUT: log.txt, tiles-<mode>-<round>.json, tiles-rank.md, edges-<tile>.log lines in log.txt.
set -u
DEV_TMP=/tmp/s18t
. scripts/device-lib.sh
mode_env() {
  case $1 in
    pick) echo "KERNELGATE_GEMM_TILE=" ;;
    t64) echo "KERNELGATE_GEMM_TILE=128x64" ;;
    n2) echo "KERNELGATE_GEMM_TILE=128x64_n2" ;;
    n2s1) echo "KERNELGATE_GEMM_TILE=128x64_n2 KERNELGATE_GEMM_SPLITK=1" ;;
    n128) echo "KERNELGATE_GEMM_TILE=128x128_n2" ;;
  esac
}
if [ "${EDGES:-1}" = 1 ]; then
  for t in 128x64 128x64_n2 128x128_n2; do
    ( export KERNELGATE_GEMM_TILE=$t; cli "edges-$t" fixtures/gemm_edges.json --backends cuda )
  done
fi
read -r -a modes <<< "${MODES:-pick t64 n2 n2s1 n128}"
interleave tiles "${SUITE:-scripts/suites/tiles.json}" "${modes[@]}"
archive_runs tiles
