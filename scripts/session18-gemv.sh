#!/usr/bin/env bash
# Session 18, GEMV runs (repo root, .devbin/ carried):
#   1. DSV3=1: the dsv3 suite gated against the committed baselines (the first GPU run of the
#      forward cross-entropy choice since it moved into src/backend/cuda/ce_fwd.rs);
#   2. scripts/suites/gemv.json (M <= 8) under each of MODES, interleaved ROUNDS times, cuBLAS
#      in every run, then ranked: new (kernels/gemm_gemv.cu, launched as a programmatic
#      dependent), nopdl (the same, ordinary launches), old (KERNELGATE_GEMV=0: the wgmma tiles /
#      gemm_skinny.cu as before), c4 (a 4-CTA-per-SM split plan);
#   3. GEMM=1: the whole gemm suite once (ours and cuBLAS), as a table.
# Under $OUT: log.txt, gemv-*.json, gemv-rank.md, gemv-table.md, gemm-table.md, results-gemm.json.
set -u
DEV_TMP=/tmp/s18
. scripts/device-lib.sh
[ "${DSV3:-0}" = 1 ] && suite dsv3gate KERNELGATE_SUITE=dsv3 .devbin/kernels
mode_env() {
  case $1 in
    new) echo "KERNELGATE_GEMV=1" ;;
    nopdl) echo "KERNELGATE_GEMV_PDL=0" ;;
    old) echo "KERNELGATE_GEMV=0" ;;
    c4) echo "KERNELGATE_GEMV_CTAS_PER_SM=4" ;;
  esac
}
read -r -a modes <<< "${MODES:-new nopdl old}"
interleave gemv scripts/suites/gemv.json "${modes[@]}"
python3 scripts/gemm-table.py "$OUT"/gemv-new-1.json > "$OUT/gemv-table.md" 2>&1
tail -1 "$OUT/gemv-table.md" | tee -a "$DEV_LOG"
if [ "${GEMM:-0}" = 1 ]; then
  suite gemm KERNELGATE_SUITE=gemm .devbin/kernels
  python3 scripts/gemm-table.py "$OUT/results-gemm.json" > "$OUT/gemm-table.md" 2>&1
  tail -1 "$OUT/gemm-table.md" | tee -a "$DEV_LOG"
fi
# SASS=1: where the B loads of gemm_gemv_bf16_8 sit in its main loop (kept together or sunk).
if [ "${SASS:-0}" = 1 ]; then
  nvcc -arch=sm_90a -Ikernels -cubin -o "$DEV_TMP/gv.cubin" kernels/gemm_gemv.cu &&
    cuobjdump -sass -fun gemm_gemv_bf16_8 "$DEV_TMP/gv.cubin" | grep -nE "LDG|LDS|BAR|WARPSYNC|FFMA|BRA|ATOM|MEMBAR" |
    awk '{print $1, $3}' | head -400 > "$OUT/sass-bf16-8.txt" 2>&1
  log "sass: $(wc -l < "$OUT/sass-bf16-8.txt") lines"
fi
