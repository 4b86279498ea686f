#!/usr/bin/env bash
# Session 36, one machine (repo root, .devbin/ carried): gemm 2048x512x4096 under each tile and
# split, against its two modes. The shape rule's 128x64 (128 CTAs, 64 K blocks) put 40-46% of
# its samples 6-7 us above the rest on every H100 of this session's gates (the gate calls it
# ambiguous there), as in sessions 24-25, where only the 2-CTA cluster tile ran in one mode.
# Since then every tile has a TMA-store epilogue; this measures them again. MODES (default
# below), ROUNDS interleaved rounds (default 2), no baselines; scripts/modes-summary.py per run
# (median, p10, p90, share of samples 10% above p10) and `kernelgate rank`.
# Under $OUT: log.txt, modes.txt, modes-rank.md, modes-runs.tar.gz.
set -u
. scripts/device-lib.sh
mode_env() {
  case "$1" in
    auto) echo "" ;;
    pdl0) echo "KERNELGATE_GEMM_PDL=0" ;;
    s2) echo "KERNELGATE_GEMM_TILE=128x128 KERNELGATE_GEMM_SPLITK=2" ;;
    s4) echo "KERNELGATE_GEMM_TILE=128x256 KERNELGATE_GEMM_SPLITK=4" ;;
    s2x64) echo "KERNELGATE_GEMM_TILE=128x64 KERNELGATE_GEMM_SPLITK=2" ;;
    p0x64) echo "KERNELGATE_GEMM_TILE=128x64 KERNELGATE_GEMM_PDL=0" ;;
    *) echo "KERNELGATE_GEMM_TILE=$1" ;;
  esac
}
export KERNELGATE_BASELINE_DIR=$DEV_TMP/nobaselines && mkdir -p "$KERNELGATE_BASELINE_DIR"
# Every run times alike (its first two runs of this session did not: the harness batched a
# kernel near 20 us in some runs and not in others, and the ranking mixed the two).
export KERNELGATE_BATCH=${KERNELGATE_BATCH:-1}
# shellcheck disable=SC2086 # MODES is a word list
ROUNDS=${ROUNDS:-2} interleave modes scripts/suites/gemm-2048x512-only.json \
  ${MODES:-auto pdl0 128x64_n2 128x128 s2 128x128_n2 128x128_c2 64x128 s4 s2x64}
args=(); for f in "$OUT"/modes-*-*.json; do m=$(basename "$f" .json); args+=("${m#modes-}=$f"); done
python3 scripts/modes-summary.py "${args[@]}" > "$OUT/modes.txt" 2>&1
grep -E "cuda::|case" "$OUT/modes.txt" | tee -a "$DEV_LOG"
archive_runs modes
log done
