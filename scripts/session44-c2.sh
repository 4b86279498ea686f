#!/usr/bin/env bash
# Session 44: the 128x256 cluster tile with the plain tile's overlapped epilogue and skewed tail
# (GW_C2_OVL) and a relaxed start-up cluster barrier (GW_C2_RELAXED).
# 1. correctness: gemm_edges and gemm (bf16/fp16) forced to 128x256_c2, gemm_edges to 128x64_n2;
# 2. the pick against the forced 128x256_c2 on c2_44, three interleaved rounds (every launch alone);
# 3. forced 128x256_c2, same-run A/B against the cluster entry without either change (old) and
#    with the relaxed barrier only (rlx), two rounds.
set -u
. scripts/device-lib.sh
for ts in 128x256_c2:gemm_edges 128x256_c2:gemm 128x64_n2:gemm_edges; do
  t=${ts%%:*} s=${ts#*:}
  KERNELGATE_GEMM_TILE=$t timeout 200 $KG run --suite $s --backends cuda --dtype bf16,fp16 --max-time 5ms \
    --output "$DEV_TMP/forced$t-$s.json" > "$DEV_TMP/forced-$t-$s.log" 2>&1
  log "forced $t $s rc=$?: $(grep -c '"verified": true' "$DEV_TMP/forced$t-$s.json") verified; $(tail -1 "$DEV_TMP/forced-$t-$s.log")"
  grep -iE "WRONG|error|hang|skip|mismatch" "$DEV_TMP/forced-$t-$s.log" | head -10 | cut -c1-220 | tee -a "$DEV_LOG"
done
( cd "$DEV_TMP" && tar czf "$OUT/forced-runs.tar.gz" forced*.json )
mode_env() { case $1 in pick) echo "KERNELGATE_BATCH=1" ;; c2) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_TILE=128x256_c2" ;; esac; }
ROUNDS=3 interleave c2 scripts/suites/c2_44.json pick c2
archive_runs c2
KERNELGATE_GEMM_TILE=128x256_c2 ROUNDS=2 PATCH_FILE=gemm_wgmma.cuh SUITE=scripts/suites/c2_44.json \
  VARIANTS="old:kernels/dev/gemm_define_patch.py+GW_C2_OVL=0+GW_C2_RELAXED=0 rlx:kernels/dev/gemm_define_patch.py+GW_C2_OVL=0" \
  timeout 200 bash scripts/ab-variants.sh > /dev/null
log done
