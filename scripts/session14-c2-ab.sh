#!/usr/bin/env bash
# Session 14 (repo root, .devbin/ carried): the 2-CTA cluster tiles after the arrive fix, forced
# (KERNELGATE_GEMM_TILE=128x256_c2, 128x128_c2) against the default pick on the gemm suite's
# bf16/fp16 cases (ours only, same binary, one after another), plus cuBLAS once for the table.
# Under $OUT: log-c2.txt, c2.tar.gz.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/c2
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log-c2.txt"; }
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee -a "$OUT/log-c2.txt"
$KG run --suite gemm --backends cuda,cublas --dtype bf16,fp16 -o /tmp/c2/default.json > /tmp/c2/default.log 2>&1
log "default: $(tail -1 /tmp/c2/default.log)"
for t in ${TILES:-128x256_c2 128x128_c2}; do
  KERNELGATE_GEMM_TILE=$t $KG run --suite gemm --backends cuda --dtype bf16,fp16 -o /tmp/c2/$t.json > /tmp/c2/$t.log 2>&1
  log "$t: $(tail -1 /tmp/c2/$t.log)"
  grep -E "WRONG|ERROR" /tmp/c2/$t.log | head -3 | cut -c1-200 | tee -a "$OUT/log-c2.txt"
  $KG compare /tmp/c2/default.json /tmp/c2/$t.json | grep -E "gemm::cuda" | cut -c1-120 | tee -a "$OUT/log-c2.txt"
done
tar -C /tmp/c2 -czf "$OUT/c2.tar.gz" .
