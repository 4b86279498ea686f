#!/usr/bin/env bash
# Session 24: a fresh H100 gated gemm::cuda::m2048_n512_k4096_bf16 at 1.13x (a false
# regression: no GEMM code changed) with its samples in two modes (19-22 and 24-26 us, 45% slow,
# sample by sample). This run: (1) SUITES gated through the test binary (norms: the second
# machine for the entries created from the first; default: does the case repeat); (2) the
# pdl-2048x512 suite under KERNELGATE_GEMM_PDL=all (default) / inner / 0, ROUNDS interleaved
# rounds, and every case's sample distribution per mode (scripts/modes-summary.py).
# Under $OUT: log.txt, modes.txt, bundle.tgz.
set -u
export OUT=${OUT:-/tmp/kgout}
DEV_TMP=/tmp/s24b
. scripts/device-lib.sh
for s in ${SUITES:-norms default}; do suite "$s" KERNELGATE_SUITE="$s" .devbin/kernels; done
mode_env() { echo "KERNELGATE_GEMM_PDL=$1"; }
export KERNELGATE_BASELINE_DIR=/tmp/s24b-nobaselines && mkdir -p "$KERNELGATE_BASELINE_DIR"
ROUNDS=${ROUNDS:-2} interleave pdl scripts/suites/pdl-2048x512.json all inner 0
args=(); for f in "$OUT"/pdl-*-*.json; do m=$(basename "$f" .json); args+=("${m#pdl-}=$f"); done
python3 scripts/modes-summary.py "${args[@]}" > "$OUT/modes.txt" 2>&1
grep -E "m2048_n512_k4096|case" "$OUT/modes.txt" | tee -a "$DEV_LOG"
cp "$DEV_TMP"/*.log "$OUT"/ 2>/dev/null
( cd "$OUT" && tar czf bundle.tgz results-*.json pdl-*.json *.log && rm -f results-*.json pdl-*.json *.log )
ls -la "$OUT"
