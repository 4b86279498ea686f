#!/usr/bin/env bash
# Session 36, one machine (repo root, .devbin/ carried, nvcc + cuBLAS): the skewed tail with
# warpgroup 1's last blocks column half by half (kernels/dev/gemm_skew_halves_patch.py), so that a
# one-wave grid (2048^3) leaves a quarter of the tile to write after the last MMA instead of half.
# 1. The dev bench's checks of the patched kernel (`zero r240`): every tile and split, 54 shapes,
#    both dtypes (built in the background during 2).
# 2. scripts/ab-variants.sh on scripts/suites/st35.json, ROUNDS rounds (default 3), each paired
#    with the shipped kernel: `aa` (an unpatched copy: the pairing's own bias), `r240` (only the
#    register split 24 / 240 the halves need), `h240` (the halves with it).
# (ab-variants.sh splits a word's patch arguments at `+`: session 36's first run of this script
# passed `240` for `+240`, so its r240 was the A/A copy and its h240 the spilling 232 split.)
# Under $OUT: log.txt, bench-checks-h240.txt, ab-table.md, ab-runs.tar.gz.
set -u
. scripts/device-lib.sh
P=kernels/dev/gemm_skew_halves_patch.py
hk=$DEV_TMP/halves && rm -rf "$hk" && mkdir -p "$hk" && cp -r kernels "$hk/" &&
  python3 "$P" "$hk/kernels/gemm_wgmma.cu" zero r240 &&
  bench_build "$DEV_TMP/gwb-h" "$DEV_TMP/bench-h.log" "$hk/kernels" &
VARIANTS="aa:- r240:$P+none+r240 h240:$P+zero+r240" SUITE=scripts/suites/st35.json \
  ROUNDS=${ROUNDS:-3} bash scripts/ab-variants.sh > /dev/null
wait
log "bench build (h240): $(tail -1 "$DEV_TMP/bench-h.log"); spill lines: $(grep -E '[1-9][0-9]* bytes spill stores' "$DEV_TMP/bench-h.log" | wc -l)"
[ -x "$DEV_TMP/gwb-h" ] && bench_checks h240 "$DEV_TMP/gwb-h" "$OUT/bench-checks-h240.txt"
log done
