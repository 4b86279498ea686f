#!/usr/bin/env bash
# Session 34, one machine (repo root; nvcc): the dev bench's --overhead (an empty kernel's launch
# time at each GEMM tile's shared-memory size, timed as the GEMMs are) after the memset flush and
# after the read sweep. Under $OUT: log.txt, overhead.txt.
set -u
. scripts/device-lib.sh
bench_build "$DEV_TMP/gwb" "$DEV_TMP/build.log" kernels
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
for f in "" --read-flush; do
  echo "== flush ${f:-memset}" >> "$OUT/overhead.txt"
  timeout 60 "$DEV_TMP/gwb" --overhead --reps 50 $f >> "$OUT/overhead.txt" 2>&1
done
cat "$OUT/overhead.txt" | tee -a "$DEV_LOG"
