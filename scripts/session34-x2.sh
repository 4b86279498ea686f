#!/usr/bin/env bash
# Session 34 on a fresh two-GPU machine: scripts/session34-suites.sh on each GPU at once
# (CUDA_VISIBLE_DEVICES=i, its own $OUT/gpuI and DEV_TMP), so that an H200 pair gives the two
# H200 machines the gemm gate and the masked suite are owed. Stops at once on H100s.
set -u
mkdir -p "$OUT/gpu0" "$OUT/gpu1"
for i in 0 1; do
  CUDA_VISIBLE_DEVICES=$i OUT=$OUT/gpu$i DEV_TMP=/tmp/kgdev$i bash scripts/session34-suites.sh > "$OUT/gpu$i/stdout.txt" 2>&1 &
done
wait
tail -n 4 "$OUT"/gpu*/log.txt
