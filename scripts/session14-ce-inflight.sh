#!/usr/bin/env bash
# Session 14 (repo root, .devbin/ carried): does capping the rows in flight help the
# cross-entropy forward on short grids? The bulk-staged kernel with at most B blocks an SM
# (KERNELGATE_CE_FWD=bulk:W:S:gB) against the default on scripts/suites/ce-short.json. With every
# row requested at once, every row lands near the end and the exponentials run after the
# data; with fewer in flight the first rows land early and their sums overlap the rest.
# Under $OUT: log-inflight.txt, inflight.tar.gz.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/inf
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log-inflight.txt"; }
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee -a "$OUT/log-inflight.txt"
$KG run --suite scripts/suites/ce-short.json --backends cuda -o /tmp/inf/default.json > /tmp/inf/default.log 2>&1
grep -E "of copy" /tmp/inf/default.log | cut -c1-120 | tee -a "$OUT/log-inflight.txt"
for c in ${VARIANTS:-bulk:8:2:g1 bulk:16:2:g1 bulk:4:2:g2 bulk:4:2:g1 bulk:8:1:g2 bulk:8:1:g1 bulk:16:1:g1 bulk:32:1:g1}; do
  KERNELGATE_CE_FWD=$c $KG run --suite scripts/suites/ce-short.json --backends cuda -o /tmp/inf/$c.json > /tmp/inf/$c.log 2>&1
  log "$c: $(tail -1 /tmp/inf/$c.log)"
  grep -E "of copy" /tmp/inf/$c.log | grep -E "m4096|m16384 n3072" | sed -E 's/.*\{(.*)\} [A-Z]+ ([0-9.]+ µs).*\(([0-9]+% of copy)\).*/  \1 \2 \3/' | tee -a "$OUT/log-inflight.txt"
done
tar -C /tmp/inf -czf "$OUT/inflight.tar.gz" .
