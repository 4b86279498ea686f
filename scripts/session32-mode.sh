#!/usr/bin/env bash
# Session 32: how often does our 4096^3 GEMM land in its slow mode on an H200, and is it the
# harness or the kernel? N processes of the CLI on scripts/suites/gemm-4096.json (ours and
# cuBLAS), alternating with N processes of the dev bench at 4096^3 (128x256 = the TMA store,
# 128x256_regs = the register epilogue, cuBLAS), both dtypes. Under $OUT: log.txt,
# mode-bench.txt, mode-table.md, mode-runs.tar.gz.
set -u
. scripts/device-lib.sh
bench_build "$DEV_TMP/gwb" "$DEV_TMP/build.log" kernels &
for r in $(seq 1 "${N:-6}"); do cli "mode-cli-$r" scripts/suites/gemm-4096.json --no-progress; done
wait
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/mode-bench.txt
for r in $(seq 1 "${N:-6}"); do
  for dt in bf16 f16; do
    echo "== round $r 4096x4096x4096 $dt" >> "$R"
    timeout 60 "$DEV_TMP/gwb" --shape 4096x4096x4096 --$dt --reps 20 --tiles 128x256,128x256_regs >> "$R" 2>&1
  done
done
{ python3 scripts/ts-table.py "$R"
  echo
  echo "| run | ours bf16 | cuBLAS bf16 | ours fp16 | cuBLAS fp16 |"
  echo "| --- | ---: | ---: | ---: | ---: |"
  for f in "$OUT"/mode-cli-*.json; do
    python3 - "$f" <<'PY'
import json, sys
t = {}
for r in json.load(open(sys.argv[1]))["results"]:
    t[(r["backend"], r["dtype"])] = r["latency_ms"] * 1e3
n = sys.argv[1].rsplit("/", 1)[-1][:-5]
print(f"| {n} | {t[('cuda','bf16')]:.1f} | {t[('cublas','bf16')]:.1f} | {t[('cuda','fp16')]:.1f} | {t[('cublas','fp16')]:.1f} |")
PY
  done; } > "$OUT/mode-table.md" 2>&1
tee -a "$DEV_LOG" < "$OUT/mode-table.md"
( cd "$OUT" && tar czf mode-runs.tar.gz mode-cli-*.json && rm -f mode-cli-*.json )
log done
