#!/usr/bin/env bash
# Session 44, second call: the last warpgroup's store from the freed ring (GW_LASTSTAGE) with the
# 192x192 overlapped epilogue (GW_OVL3).
# 1. correctness: gemm and gemm_edges' bf16/fp16 cases with the tile forced to 128x256 and to
#    192x192 (float64 reference, poisoned output), ours only, short timing;
# 2. same-run A/B on the squares (sq44) against the checkout: an A/A control, the checkout without
#    the ring store (ring), and session 43's kernel (old), three rounds;
# 3. the gate (SUITES, default gemm gemm_edges smoke) with the committed baselines.
set -u
. scripts/device-lib.sh
for t in 128x256 192x192; do
  for s in gemm_edges gemm; do
    KERNELGATE_GEMM_TILE=$t timeout 200 $KG run --suite $s --backends cuda --dtype bf16,fp16 --max-time 5ms \
      --output "$DEV_TMP/forced$t-$s.json" > "$DEV_TMP/forced-$t-$s.log" 2>&1
    log "forced $t $s rc=$?: $(grep -c '"verified": true' "$DEV_TMP/forced$t-$s.json") verified; $(tail -1 "$DEV_TMP/forced-$t-$s.log")"
    grep -iE "WRONG|error|hang|skip|mismatch" "$DEV_TMP/forced-$t-$s.log" | head -10 | cut -c1-220 | tee -a "$DEV_LOG"
  done
done
( cd "$DEV_TMP" && tar czf "$OUT/forced-runs.tar.gz" forced*.json )
ROUNDS=3 PATCH_FILE=gemm_wgmma.cuh SUITE=scripts/suites/sq44.json \
  VARIANTS="aa:- ring:kernels/dev/gemm_define_patch.py+GW_LASTSTAGE=0 old:kernels/dev/gemm_define_patch.py+GW_OVL3=0+GW_LASTSTAGE=0" \
  timeout 300 bash scripts/ab-variants.sh > /dev/null
for n in ${SUITES-gemm gemm_edges smoke}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
( cd "$OUT" && gzip -9 -n results-*.json )
log done
