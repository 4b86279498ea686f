#!/usr/bin/env bash
# Session 18 (repo root, .devbin/ carried): the wgmma GEMM sequence launched with
# KERNELGATE_GEMM_PDL unset (then: only kernels after the first as programmatic dependents; now
# spelled `inner`) and =all (the first one too, so back-to-back launches of a case overlap; the
# default since this run), on
# scripts/suites/gemm-small.json with cuBLAS in every run, interleaved ROUNDS times, ranked.
# Under $OUT: log.txt, pdl-rank.md, pdl-runs.tar.gz.
set -u
DEV_TMP=/tmp/s18p
. scripts/device-lib.sh
modes=(inner all)
for r in $(seq 1 "${ROUNDS:-2}"); do
  for v in "${modes[@]}"; do
    ( export KERNELGATE_GEMM_PDL=$v; cli "pdl-$v-$r" scripts/suites/gemm-small.json )
  done
  modes=($(printf '%s\n' "${modes[@]}" | tac))
done
args=()
for v in inner all; do for f in "$OUT"/pdl-"$v"-*.json; do [ -f "$f" ] && args+=("$v=$f"); done; done
$KG rank "${args[@]}" > "$OUT/pdl-rank.md" 2>&1; log "rank rc=$?"
( cd "$OUT" && tar czf pdl-runs.tar.gz pdl-*-*.json && rm -f pdl-*-*.json )
