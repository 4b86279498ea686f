#!/usr/bin/env bash
# Session 14 (repo root, .devbin/ carried): stall reasons of the 2-CTA cluster GEMM tile next to
# the plain one (4096^3 bf16, Nsight Compute WarpStateStats with details, source counters with
# the top stall locations) and the SASS of both entries from the harness's NVRTC cache.
# Under $OUT: ncu-c2b.tar.gz, log-ncu.txt.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/ncu
export KERNELGATE_CACHE_DIR=/tmp/kgcache
NCU_BIN=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
echo '{"description":"ncu","groups":[{"kernel":"gemm","backends":["cuda"],"dtypes":["bf16"],"shapes":[{"m":4096,"n":4096,"k":4096}]}]}' > /tmp/ncu/one.json
for tile in 128x256 128x256_c2; do
  KERNELGATE_GEMM_TILE=$tile timeout 240 $NCU_BIN -k regex:gemm_wgmma -c 1 --section WarpStateStats \
    --section SourceCounters --print-details all \
    .devbin/kernelgate run --suite /tmp/ncu/one.json --backends cuda --output /tmp/ncu/r-$tile.json > /tmp/ncu/ncu-$tile.txt 2>&1
  echo "== ncu $tile rc=$?" | tee -a "$OUT/log-ncu.txt"
  grep -iE "stall|Warp Cycles" /tmp/ncu/ncu-$tile.txt | head -60 | tee -a "$OUT/log-ncu.txt"
done
CUOBJ=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null | head -1)
for f in $(grep -l -r "gemm_wgmma_bf16_128x256_c2" /tmp/kgcache 2>/dev/null | head -2); do
  $CUOBJ -sass -fun gemm_wgmma_bf16_128x256_c2 "$f" > /tmp/ncu/sass-c2.txt 2>&1
  $CUOBJ -sass -fun gemm_wgmma_bf16_128x256 "$f" > /tmp/ncu/sass-plain.txt 2>&1
  echo "sass from $f: $(wc -l < /tmp/ncu/sass-c2.txt) / $(wc -l < /tmp/ncu/sass-plain.txt) lines" | tee -a "$OUT/log-ncu.txt"
done
ls -la /tmp/kgcache | head -5 | tee -a "$OUT/log-ncu.txt"
tar -C /tmp/ncu -czf "$OUT/ncu-c2b.tar.gz" .
