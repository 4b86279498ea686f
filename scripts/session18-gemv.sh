#!/usr/bin/env bash
# Session 18, first device run (repo root, .devbin/ carried):
#   1. the dsv3 suite gated against the committed baselines: the first GPU run of the forward
#      cross-entropy choice since it moved into src/backend/cuda/ce_fwd.rs;
#   2. scripts/suites/gemv.json (M <= 8) with the new GEMV kernels (kernels/gemm_gemv.cu), with
#      them turned off (KERNELGATE_GEMV=0: the wgmma tiles / gemm_skinny.cu as before) and with a
#      4-CTA-per-SM split plan, interleaved ROUNDS times, cuBLAS in every run; ranked.
# Under $OUT: log.txt, results-dsv3gate.json, gemv-*.json, gemv-rank.md, gemv-table.md.
set -u
DEV_TMP=/tmp/s18
. scripts/device-lib.sh
[ "${SKIP_DSV3:-0}" = 1 ] || suite dsv3gate KERNELGATE_SUITE=dsv3 .devbin/kernels
for r in $(seq 1 "${ROUNDS:-2}"); do
  cli "gemv-new-$r" scripts/suites/gemv.json
  KERNELGATE_GEMV=0 cli "gemv-old-$r" scripts/suites/gemv.json
  KERNELGATE_GEMV_CTAS_PER_SM=4 cli "gemv-c4-$r" scripts/suites/gemv.json
done
args=()
for v in new old c4; do for f in "$OUT"/gemv-"$v"-*.json; do [ -f "$f" ] && args+=("$v=$f"); done; done
$KG rank "${args[@]}" > "$OUT/gemv-rank.md" 2>&1; log "rank rc=$?"
python3 scripts/gemm-table.py "$OUT"/gemv-new-1.json > "$OUT/gemv-table.md" 2>&1
tail -3 "$OUT/gemv-table.md" | tee -a "$DEV_LOG"
