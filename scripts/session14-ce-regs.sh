#!/usr/bin/env bash
# Session 14 (repo root, .devbin/ carried): the register-resident cross-entropy forward
# (KERNELGATE_CE_FWD=regs) against the default and bulk:8:1 on scripts/suites/ce-all.json (dsv3 and
# default-suite shapes in bf16, fp16/fp32 and odd shapes for correctness), the norms suite's
# cross_entropy cases with it forced, and on an H200 the quack suite's cross_entropy with it.
# Under $OUT: log-ce.txt, ce-regs.tar.gz.
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT" /tmp/s14r
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log-ce.txt"; }
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee -a "$OUT/log-ce.txt"
$KG run --suite scripts/suites/ce-all.json --backends cuda --output /tmp/s14r/default.json > /tmp/s14r/default.log 2>&1
log "ce-all default: $(tail -1 /tmp/s14r/default.log)"
grep -E "% of copy" /tmp/s14r/default.log | cut -c1-120 | tee -a "$OUT/log-ce.txt"
for c in regs bulk:8:1; do
  KERNELGATE_CE_FWD=$c $KG run --suite scripts/suites/ce-all.json --backends cuda --output /tmp/s14r/$c.json > /tmp/s14r/$c.log 2>&1
  log "ce-all $c: $(tail -1 /tmp/s14r/$c.log)"
  grep -iE "wrong|error|fail" /tmp/s14r/$c.log | head -5 | cut -c1-300 | tee -a "$OUT/log-ce.txt"
  grep -E "% of copy" /tmp/s14r/$c.log | cut -c1-120 | tee -a "$OUT/log-ce.txt"
  $KG compare /tmp/s14r/default.json /tmp/s14r/$c.json | grep -E "cross_entropy::" | cut -c1-150 | tee -a "$OUT/log-ce.txt"
done
KERNELGATE_CE_FWD=regs $KG run --suite norms --kernels cross_entropy --backends cuda --output /tmp/s14r/norms-regs.json > /tmp/s14r/norms-regs.log 2>&1
log "norms cross_entropy, regs forced: $(tail -1 /tmp/s14r/norms-regs.log)"
grep -iE "wrong|error|fail" /tmp/s14r/norms-regs.log | cut -c1-200 | head -20 | tee -a "$OUT/log-ce.txt"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  for c in auto regs; do
    KERNELGATE_CE_FWD=$c $KG run --suite quack --kernels cross_entropy --backends cuda --output /tmp/s14r/quack-ce-$c.json > /tmp/s14r/quack-ce-$c.log 2>&1
    log "quack cross_entropy $c: $(tail -1 /tmp/s14r/quack-ce-$c.log)"
    grep -E "% of copy" /tmp/s14r/quack-ce-$c.log | cut -c1-120 | tee -a "$OUT/log-ce.txt"
  done
fi
tar -C /tmp/s14r -czf "$OUT/ce-regs.tar.gz" .
