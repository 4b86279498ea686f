#!/usr/bin/env bash
# Session 32: is the 2048^3 gap between the dev bench (ours at 0.997-1.001 of cuBLAS on H100
# 4afff127 and bcf3c456) and the harness (0.97-0.99 on H100 3910abed, e22d3f62, 640beb2f) the
# tools or the machines? Both on one machine, ROUNDS alternating rounds: the dev bench at 2048^3
# (bf16, fp16; 128x256 = the TMA-store entry, cuBLAS in the same process) and the CLI on
# scripts/suites/gemm-2048.json (ours and cuBLAS). Under $OUT: log.txt, tools-bench.txt,
# tools-table.md, tools-runs.tar.gz.
set -u
. scripts/device-lib.sh
bench_build "$DEV_TMP/gwb" "$DEV_TMP/build.log" kernels
log "bench build rc=$?"
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/tools-bench.txt
for r in $(seq 1 "${ROUNDS:-3}"); do
  for dt in bf16 f16; do
    echo "== round $r 2048x2048x2048 $dt" >> "$R"
    timeout 60 "$DEV_TMP/gwb" --shape 2048x2048x2048 --$dt --reps 40 --tiles 128x256 >> "$R" 2>&1
  done
  cli "tools-cli-$r" scripts/suites/gemm-2048.json --no-progress
done
python3 scripts/ts-table.py "$R" > "$OUT/tools-table.md" 2>&1
for f in "$OUT"/tools-cli-*.json; do echo "== $(basename "$f")"; python3 scripts/gemm-table.py "$f" | grep -E "2048×2048"; done >> "$OUT/tools-table.md" 2>&1
cut -c1-110 "$OUT/tools-table.md" | tee -a "$DEV_LOG"
( cd "$OUT" && tar czf tools-runs.tar.gz tools-cli-*.json && rm -f tools-cli-*.json )
log done
