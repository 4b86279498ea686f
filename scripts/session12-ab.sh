#!/usr/bin/env bash
# Session 12 A/B on one GPU machine (repo root, .devbin/ carried: scripts/build-device.sh):
#  1. the bulk-staged rmsnorm_bwd against the default kernels (scripts/rmsnorm-bwd-bulk-ab.sh);
#  2. the block-per-row cross-entropy forward (kernels/cross_entropy_bulk.cu, KERNELGATE_CE_FWD=block)
#     through the harness: the norms suite's cross_entropy cases forced onto it (correctness), then
#     the dsv3 cross_entropy cases with each kernel and `kernelgate compare` (B = block);
#  3. the rows bench (kernels/dev/run_rows_bench.sh) on cross_entropy: correctness with the block
#     kernel in the _r column (CEB_VPT=4), then speed with CEB_VPT 2, 4, 8, and builds with
#     KG_CEB_POLY=1 and KG_CEB_STAGES=3.
# Under $OUT: log.txt and session12-ab.tar.gz (results and full logs).
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT" /tmp/s12
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log.txt"; }
# Bench builds in the background while the harness runs.
for b in 0:"" 1:"-DKG_CEB_POLY=1" 3:"-DKG_CEB_STAGES=3"; do
  k=${b%%:*}; f=${b#*:}
  ( OUT_DIR=/tmp/rb$k EXTRA_NVCC_FLAGS="$f" bash kernels/dev/run_rows_bench.sh --help > /tmp/s12/build$k.log 2>&1 ) &
done
OUT=/tmp/s12 bash scripts/rmsnorm-bwd-bulk-ab.sh > /dev/null 2>&1
cat /tmp/s12/log.txt >> "$OUT/log.txt"
KERNELGATE_CE_FWD=block $KG run --suite norms --kernels cross_entropy --backends cuda \
  --output /tmp/s12/ce-norms-block.json > /tmp/s12/ce-norms-block.log 2>&1
log "norms cross_entropy (block forced): $(tail -1 /tmp/s12/ce-norms-block.log)"
grep -E "WRONG|FAIL|rror" /tmp/s12/ce-norms-block.log | cut -c1-240 | head -20 | tee -a "$OUT/log.txt"
$KG run --suite dsv3 --kernels cross_entropy --backends cuda --output /tmp/s12/ce-dsv3-default.json > /tmp/s12/ce-d.log 2>&1
KERNELGATE_CE_FWD=block $KG run --suite dsv3 --kernels cross_entropy --backends cuda --output /tmp/s12/ce-dsv3-block.json > /tmp/s12/ce-b.log 2>&1
grep -E "% of copy" /tmp/s12/ce-d.log | cut -c1-150 | sed 's/^/default /' | tee -a "$OUT/log.txt"
grep -E "% of copy" /tmp/s12/ce-b.log | cut -c1-150 | sed 's/^/block   /' | tee -a "$OUT/log.txt"
$KG compare /tmp/s12/ce-dsv3-default.json /tmp/s12/ce-dsv3-block.json | tee -a "$OUT/log.txt"
wait
for k in 0 1 3; do log "bench build $k: $(grep -E 'built|FAILED' /tmp/s12/build$k.log | head -3)"; done
CEB_VPT=4 timeout 120 /tmp/rb0/rows_bench --check-only --fam cross_entropy > /tmp/s12/bench-check.log 2>&1
log "bench check (block kernel in _r, VPT 4): $(grep -E 'PASS|FAIL|pass' /tmp/s12/bench-check.log | tail -3 | tr '\n' ' ')"
grep -E "FAIL" /tmp/s12/bench-check.log | head -10 | tee -a "$OUT/log.txt"
for run in "0 2" "0 4" "0 8" "1 4" "3 4"; do
  set -- $run
  log "bench speed: build $1 (0 plain, 1 POLY, 3 STAGES=3), CEB_VPT=$2"
  CEB_VPT=$2 timeout 150 /tmp/rb$1/rows_bench --speed-only --fam cross_entropy > /tmp/s12/bench-$1-$2.log 2>&1
  grep -E "^cross_entropy|copy bandwidth:|read-only" /tmp/s12/bench-$1-$2.log | cut -c1-200 | tee -a "$OUT/log.txt"
done
tar -C /tmp/s12 -czf "$OUT/session12-ab.tar.gz" .
