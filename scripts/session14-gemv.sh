#!/usr/bin/env bash
# Session 14 (repo root, .devbin/ carried): the opt-in GEMV kernel (kernels/gemv.cu,
# KERNELGATE_GEMM_GEMV=1): correctness on .devbin/gemv.json (odd M, N, K; one and many slices),
# then its time against the default path and cuBLAS on .devbin/gemv-ab.json, same binary.
# Under $OUT: log-gemv.txt, gemv.tar.gz.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/gv
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee -a "$OUT/log-gemv.txt"
KERNELGATE_GEMM_GEMV=1 $KG run --suite .devbin/gemv.json --max-time 100ms -o /tmp/gv/check.json > /tmp/gv/check.log 2>&1
echo "== check (forced): $(tail -1 /tmp/gv/check.log)" | tee -a "$OUT/log-gemv.txt"
grep -E "WRONG|ERROR|FAILED" /tmp/gv/check.log | cut -c1-250 | head -12 | tee -a "$OUT/log-gemv.txt"
$KG run --suite .devbin/gemv-ab.json -o /tmp/gv/default.json > /tmp/gv/default.log 2>&1
echo "== default (ours and cuBLAS)" | tee -a "$OUT/log-gemv.txt"
grep -E "gemm (cuda|cublas)" /tmp/gv/default.log | sed -E 's/ \(tma.*//' | cut -c1-140 | tee -a "$OUT/log-gemv.txt"
for how in 1 reduce; do
  KERNELGATE_GEMM_GEMV=$how $KG run --suite .devbin/gemv-ab.json --backends cuda -o /tmp/gv/gemv-$how.json > /tmp/gv/gemv-$how.log 2>&1
  echo "== KERNELGATE_GEMM_GEMV=$how against the default" | tee -a "$OUT/log-gemv.txt"
  grep -E "gemm cuda" /tmp/gv/gemv-$how.log | grep -E "m1 n4096 k4096|m5 n3000" | cut -c1-260 | tee -a "$OUT/log-gemv.txt"
  $KG compare /tmp/gv/default.json /tmp/gv/gemv-$how.json | grep -E "gemm::cuda" | cut -c1-110 | tee -a "$OUT/log-gemv.txt"
done
tar -C /tmp/gv -czf "$OUT/gemv.tar.gz" .
