#!/usr/bin/env bash
# Session 24: is the two-mode timing of gemm m2048_n512_k4096 (128x64 tile, 128 CTAs, 40% of
# launches about 7 us slower, sample by sample, on every H100 tried) the tile's? (1) SUITES
# gated through the test binary (fresh-machine evidence; norms entries); (2) the
# gemm-2048x512 suite under each forced tile / split (KERNELGATE_GEMM_TILE, _SPLITK), ROUNDS
# interleaved rounds, every case's sample distribution per mode (scripts/modes-summary.py) and
# `kernelgate rank`. Under $OUT: log.txt, modes.txt, tiles-rank.md, bundle.tgz.
set -u
export OUT=${OUT:-/tmp/kgout}
DEV_TMP=/tmp/s24t
. scripts/device-lib.sh
for s in ${SUITES:-}; do suite "$s" KERNELGATE_SUITE="$s" .devbin/kernels; done
mode_env() {
  case "$1" in
    auto) echo "" ;;
    s2) echo "KERNELGATE_GEMM_TILE=128x128 KERNELGATE_GEMM_SPLITK=2" ;;
    *) echo "KERNELGATE_GEMM_TILE=$1" ;;
  esac
}
export KERNELGATE_BASELINE_DIR=/tmp/s24t-nobaselines && mkdir -p "$KERNELGATE_BASELINE_DIR"
ROUNDS=${ROUNDS:-2} interleave tiles scripts/suites/gemm-2048x512.json ${MODES:-auto 128x64_n2 128x128 64x128 128x128_n2 s2}
args=(); for f in "$OUT"/tiles-*-*.json; do m=$(basename "$f" .json); args+=("${m#tiles-}=$f"); done
python3 scripts/modes-summary.py "${args[@]}" > "$OUT/modes.txt" 2>&1
grep -E "cuda::m2048_n512|case" "$OUT/modes.txt" | tee -a "$DEV_LOG"
cp "$DEV_TMP"/*.log "$OUT"/ 2>/dev/null
( cd "$OUT" && tar czf bundle.tgz results-*.json tiles-*-*.json *.log 2>/dev/null; rm -f results-*.json tiles-*-*.json *.log )
ls -la "$OUT"
