#!/usr/bin/env bash
# The opt-in bulk-staged rmsnorm_bwd (kernels/rmsnorm_bwd_bulk.cu, KERNELGATE_RMSNORM_BWD=bulk)
# against the default kernels, through the harness, on one GPU machine (repo root, .devbin/
# carried: scripts/build-device.sh). Correctness first: the norms suite's rmsnorm_bwd cases with
# the bulk kernel forced (the shapes it cannot take, rows that are not 16-byte multiples or
# longer than 2048 vectors, fail with that reason by design); then the dsv3 and (QUACK=1) quack
# rmsnorm_bwd cases timed with each kernel, and `kernelgate compare` of the two (B = bulk).
# Under $OUT: log.txt and the results files.
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT"
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee -a "$OUT/log.txt"
KERNELGATE_RMSNORM_BWD=bulk $KG run --suite norms --kernels rmsnorm_bwd --backends cuda \
  --output "$OUT/norms-bulk.json" > /tmp/norms-bulk.log 2>&1
echo "== norms (bulk forced): $(tail -1 /tmp/norms-bulk.log)" | tee -a "$OUT/log.txt"
grep -E "WRONG|FAIL" /tmp/norms-bulk.log | cut -c1-220 | tee -a "$OUT/log.txt"
for s in dsv3 ${QUACK:+quack}; do
  $KG run --suite $s --kernels rmsnorm_bwd --backends cuda --output "$OUT/$s-default.json" > /tmp/$s-d.log 2>&1
  KERNELGATE_RMSNORM_BWD=bulk $KG run --suite $s --kernels rmsnorm_bwd --backends cuda \
    --output "$OUT/$s-bulk.json" > /tmp/$s-b.log 2>&1
  grep -E "rmsnorm_bwd" /tmp/$s-b.log | grep -E "%" | cut -c1-160 | tee -a "$OUT/log.txt"
  $KG compare "$OUT/$s-default.json" "$OUT/$s-bulk.json" | tee -a "$OUT/log.txt"
done
