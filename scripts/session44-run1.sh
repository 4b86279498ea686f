#!/usr/bin/env bash
# Session 44, first call: the 192x192 tile's overlapped epilogue and skewed tail (GW_OVL3).
# 1. correctness: the gemm and gemm_edges suites' bf16/fp16 cases with the tile forced to 192x192
#    (float64 reference, poisoned output), ours only, short timing;
# 2. same-run A/B at 3072^3 against session 43's kernel (kernels/dev/gemm_ovl3_revert_patch.py)
#    and an unpatched A/A control, three rounds;
# 3. the forced 192x192 against the pick on larger shapes (t192_44), two interleaved rounds;
# 4. the gate (SUITES, default gemm gemm_edges smoke) with the committed baselines.
set -u
. scripts/device-lib.sh
for s in gemm_edges gemm; do
  KERNELGATE_GEMM_TILE=192x192 timeout 300 $KG run --suite $s --backends cuda --dtype bf16,fp16 --max-time 20ms \
    --output "$OUT/forced192-$s.json" > "$DEV_TMP/forced-$s.log" 2>&1
  log "forced 192x192 $s rc=$?: $(tail -1 "$DEV_TMP/forced-$s.log")"
  grep -iE "WRONG|error|fail|hang|skip" "$DEV_TMP/forced-$s.log" | head -10 | cut -c1-220 | tee -a "$DEV_LOG"
done
( cd "$OUT" && gzip -9 -n forced192-*.json )
ROUNDS=3 PATCH_FILE=gemm_wgmma.cuh SUITE=scripts/suites/sq3072_44.json \
  VARIANTS="aa:- old:kernels/dev/gemm_ovl3_revert_patch.py" timeout 240 bash scripts/ab-variants.sh
mode_env() { case $1 in pick) echo "KERNELGATE_BATCH=1" ;; t192) echo "KERNELGATE_BATCH=1 KERNELGATE_GEMM_TILE=192x192" ;; esac; }
interleave t192 scripts/suites/t192_44.json pick t192
archive_runs t192
for n in ${SUITES-gemm gemm_edges smoke}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
( cd "$OUT" && gzip -9 -n results-*.json )
log done
