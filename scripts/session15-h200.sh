#!/usr/bin/env bash
# Session 15 on an H200 (repo root, .devbin/ carried). Part `suites`: the quack suite (its largest
# cases need more than 78 GiB) and dsv3, whole, defaults (wall time, pass count, fractions of
# copy bandwidth), then attention_bars with torch SDPA in the same run. Part `rounds`:
# scripts/gemm-rounds.sh with APPEND_KERNELS=cross_entropy (this machine's baseline round).
# Under $OUT: log-suites.txt and result files, or gemm-rounds.sh's files.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/h2
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log-suites.txt"; }
if [ "${1:-suites}" = suites ]; then
  nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee -a "$OUT/log-suites.txt"
  for s in quack dsv3; do
    t0=$(date +%s)
    $KG run --suite $s --backends cuda --output "$OUT/$s.json" > /tmp/h2/$s.log 2>&1
    log "$s (whole suite) rc=$? wall $(( $(date +%s) - t0 )) s: $(tail -1 /tmp/h2/$s.log)"
    grep -iE "skip|WRONG|error" /tmp/h2/$s.log | head -8 | cut -c1-200 | tee -a "$OUT/log-suites.txt"
  done
  $KG run --suite attention_bars --backends cuda,torch -o "$OUT/bars.json" > /tmp/h2/bars.log 2>&1
  log "attention_bars rc=$?: $(tail -1 /tmp/h2/bars.log)"
  grep -E "mha (cuda|torch)" /tmp/h2/bars.log | cut -c1-130 | tee -a "$OUT/log-suites.txt"
  tar -C /tmp/h2 -czf "$OUT/logs.tar.gz" .
else
  APPEND_KERNELS=cross_entropy bash scripts/gemm-rounds.sh
fi
