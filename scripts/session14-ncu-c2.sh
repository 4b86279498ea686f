#!/usr/bin/env bash
# Session 14 (repo root, .devbin/ carried): Nsight Compute of the 2-CTA cluster GEMM tile
# (KERNELGATE_GEMM_TILE=128x256_c2) next to the plain 128x256 tile at 4096^3 bf16, one launch
# each, through the harness (the start-up calibration GEMMs are cuBLAS, outside the filter), with
# the stall reasons in detail, and the SASS of both entries.
# Under $OUT: ncu-c2.tar.gz and the key lines in log-ncu.txt.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/ncu
export KERNELGATE_CACHE_DIR=/tmp/kgcache
NCU_BIN=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
echo '{"description":"ncu","groups":[{"kernel":"gemm","backends":["cuda"],"dtypes":["bf16"],"shapes":[{"m":4096,"n":4096,"k":4096}]}]}' > /tmp/ncu/one.json
for tile in 128x256 128x256_c2; do
  KERNELGATE_GEMM_TILE=$tile timeout 240 $NCU_BIN -k regex:gemm_wgmma -c 1 --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats \
    --section Occupancy --section SourceCounters --section ComputeWorkloadAnalysis --print-details all \
    .devbin/kernelgate run --suite /tmp/ncu/one.json --backends cuda --output /tmp/ncu/r-$tile.json > /tmp/ncu/ncu-$tile.txt 2>&1
  echo "== ncu $tile rc=$?" | tee -a "$OUT/log-ncu.txt"
  grep -E "Duration|SM Frequency|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Eligible Warps|No Eligible|Cluster|Grid Size|Waves Per SM|Stall|stall" /tmp/ncu/ncu-$tile.txt | head -60 | tee -a "$OUT/log-ncu.txt"
done
# The SASS of both entries, from the harness's NVRTC cache (where the remote stage release's
# fences showed).
CUOBJ=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null | head -1)
for f in $(grep -l -r "gemm_wgmma_bf16_128x256_c2" /tmp/kgcache 2>/dev/null | head -1); do
  $CUOBJ -sass -fun gemm_wgmma_bf16_128x256_c2 "$f" > /tmp/ncu/sass-c2.txt 2>&1
  $CUOBJ -sass -fun gemm_wgmma_bf16_128x256 "$f" > /tmp/ncu/sass-plain.txt 2>&1
  echo "sass from $f: $(grep -c MEMBAR /tmp/ncu/sass-c2.txt) / $(grep -c MEMBAR /tmp/ncu/sass-plain.txt) MEMBAR lines (c2 / plain)" | tee -a "$OUT/log-ncu.txt"
done
tar -C /tmp/ncu -czf "$OUT/ncu-c2.tar.gz" .
