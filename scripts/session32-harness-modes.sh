#!/usr/bin/env bash
# Session 32: why the harness puts 2048^3 at 0.98 of cuBLAS where the dev bench puts it at
# 0.997 (H100 4afff127). scripts/suites/gemm-2048.json (ours and cuBLAS, bf16 and fp16) through
# the CLI in three modes, ROUNDS interleaved rounds, ranked: the defaults (read flush, every GEMM
# launch a programmatic dependent); KERNELGATE_GEMM_PDL=0 (ordinary launches); and
# KERNELGATE_L2_FLUSH=write (a memset flush, as the dev bench does).
# Under $OUT: log.txt, modes-rank.md, modes-runs.tar.gz, modes-table.md.
set -u
. scripts/device-lib.sh
mode_env() {
  case $1 in
    default) echo "" ;;
    pdl0) echo "KERNELGATE_GEMM_PDL=0" ;;
    wflush) echo "KERNELGATE_L2_FLUSH=write" ;;
  esac
}
ROUNDS=${ROUNDS:-3} interleave modes scripts/suites/gemm-2048.json default pdl0 wflush
for f in "$OUT"/modes-*-[0-9].json; do echo "== $(basename "$f")"; python3 scripts/gemm-table.py "$f" | grep -E "2048×2048"; done > "$OUT/modes-table.md" 2>&1
cat "$OUT/modes-table.md" | cut -c1-60 | tee -a "$DEV_LOG"
archive_runs modes
log done
