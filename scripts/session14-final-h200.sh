#!/usr/bin/env bash
# Session 14, a fresh H200 after the last kernel change (repo root, .devbin/ carried):
#  1. C2=1: the 2-CTA cluster tile forced against the pick on the big GEMMs (scripts/suites/c2big.json);
#  2. the quack suite (needs the H200's memory) and dsv3, whole, defaults: wall time, pass count;
#  3. scripts/gemm-rounds.sh with APPEND_KERNELS=cross_entropy (a baseline round).
# Under $OUT: log*.txt and one tarball.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/fin
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log-suites.txt"; }
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee -a "$OUT/log-suites.txt"
if [ "${C2:-1}" = 1 ]; then
  $KG run --suite scripts/suites/c2big.json --backends cuda -o /tmp/fin/c2-pick.json > /tmp/fin/c2-pick.log 2>&1
  KERNELGATE_GEMM_TILE=128x256_c2 $KG run --suite scripts/suites/c2big.json --backends cuda -o /tmp/fin/c2-forced.json > /tmp/fin/c2-forced.log 2>&1
  log "c2 forced: $(tail -1 /tmp/fin/c2-forced.log)"
  $KG compare /tmp/fin/c2-pick.json /tmp/fin/c2-forced.json | grep -E "gemm::" | cut -c1-120 | tee -a "$OUT/log-suites.txt"
fi
for s in ${SUITES:-quack dsv3}; do
  t0=$(date +%s)
  $KG run --suite $s --backends cuda --output /tmp/fin/$s.json > /tmp/fin/$s.log 2>&1
  log "$s (whole suite) rc=$? wall $(( $(date +%s) - t0 )) s: $(tail -1 /tmp/fin/$s.log)"
  grep -iE "skip|WRONG|FAIL|error" /tmp/fin/$s.log | head -8 | cut -c1-200 | tee -a "$OUT/log-suites.txt"
  grep -E "cross_entropy cuda" /tmp/fin/$s.log | cut -c1-110 | tee -a "$OUT/log-suites.txt"
done
APPEND_KERNELS=cross_entropy bash scripts/gemm-rounds.sh
tar -C /tmp/fin -czf "$OUT/fin.tar.gz" .
