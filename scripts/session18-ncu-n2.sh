#!/usr/bin/env bash
# Session 18 (repo root, .devbin/ carried): Nsight Compute of the plain 128x64 tile next to its
# 2-CTA cluster paired along N (128x64_n2, A multicast) at 2048x512x4096 bf16, one launch each,
# through the CLI, with stall reasons: why the cluster tiles run slower than the plain ones.
# Under $OUT: ncu-n2.tar.gz and the key lines in log-ncu.txt.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/ncu
export KERNELGATE_CACHE_DIR=/tmp/kgcache
NCU_BIN=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee -a "$OUT/log-ncu.txt"
echo '{"description":"ncu","groups":[{"kernel":"gemm","backends":["cuda"],"dtypes":["bf16"],"shapes":[{"m":2048,"n":512,"k":4096}]}]}' > /tmp/ncu/one.json
for tile in 128x64 128x64_n2; do
  KERNELGATE_GEMM_TILE=$tile timeout 110 $NCU_BIN -k regex:gemm_wgmma -s 3 -c 1 --section SpeedOfLight \
    --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats \
    --section SourceCounters --print-details all \
    .devbin/kernelgate run --suite /tmp/ncu/one.json --backends cuda --output /tmp/ncu/r-$tile.json > /tmp/ncu/ncu-$tile.txt 2>&1
  echo "== ncu $tile rc=$?" | tee -a "$OUT/log-ncu.txt"
  grep -E "Duration|SM Frequency|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Eligible Warps|No Eligible|Cluster|Grid Size|Stall|stall" /tmp/ncu/ncu-$tile.txt | head -50 | tee -a "$OUT/log-ncu.txt"
done
tar -C /tmp/ncu -czf "$OUT/ncu-n2.tar.gz" .
