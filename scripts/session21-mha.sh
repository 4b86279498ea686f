#!/usr/bin/env bash
# Session 21 (repo root, .devbin/ carried, .devbin/base/kernels = the kernels before the change):
# chained tiles in the non-causal d128 attention entries (MHA_WG_CHAIN in kernels/mha_wgmma.cu).
#   1. correctness through the harness (float64 reference): chain-check (several tiles per CTA,
#      GQA, odd key lengths, split tails after chained tiles), bn-check (awkward small shapes),
#      mha_edges;
#   2. paired A/B against the base kernels on the non-causal d128 bar shapes (bn-speed, ROUNDS);
#   3. attention_bars with torch SDPA in the same run (our new kernel / cuDNN).
# Under $OUT: log.txt, ab.json, bars.json, check.tgz.
set -u
DEV_TMP=/tmp/s21m
. scripts/device-lib.sh
cli chain-check scripts/suites/chain-check.json --backends cuda
cli bn-check scripts/suites/bn-check.json --backends cuda
cli edges mha_edges --backends cuda
for f in chain-check bn-check edges; do
  grep -E "mha cuda" "$DEV_TMP/$f.log" | grep -vE " ok | pass" | head -5 | cut -c1-200 | tee -a "$DEV_LOG"
done
[ "${AB:-1}" = 1 ] && {
  cli ab scripts/suites/bn-speed.json --backends cuda --base .devbin/base
  grep -E "faster|slower|same|A/B|base" "$DEV_TMP/ab.log" | cut -c1-190 | head -24 | tee -a "$DEV_LOG"
}
[ "${BARS:-1}" = 1 ] && {
  cli bars attention_bars --backends cuda,torch
  grep -E "mha (cuda|torch)" "$DEV_TMP/bars.log" | sed -E 's/ \(tma[^)]*\)//' | cut -c1-150 | tee -a "$DEV_LOG"
}
( cd "$OUT" && tar czf check.tgz chain-check.json bn-check.json edges.json && rm -f chain-check.json bn-check.json edges.json )
cp "$DEV_TMP"/*.log "$OUT"/ 2>/dev/null; ( cd "$OUT" && tar czf logs.tgz *.log && rm -f *.log )
ls "$OUT"
