#!/usr/bin/env bash
# Session 14 (repo root, .devbin/ carried): where the time of the M <= 16 GEMMs goes, for the
# next session. Nsight Compute (speed of light, launch, occupancy) of every kernel of one launch
# of 1x4096x4096 and 5x3000x1000 bf16 on the wgmma path (default) and on the streaming skinny-M
# kernel (KERNELGATE_SKINNY_WGMMA=0), plus the harness's times of both paths (no profiler).
# Under $OUT: log-skinny.txt, skinny.tar.gz.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/sk
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
NCU_BIN=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee -a "$OUT/log-skinny.txt"
echo '{"description":"skinny M","groups":[{"kernel":"gemm","backends":["cuda","cublas"],"dtypes":["bf16"],"shapes":[{"m":1,"n":4096,"k":4096},{"m":5,"n":3000,"k":1000},{"m":3,"n":5000,"k":77}]}]}' > /tmp/sk/s.json
for sw in 1 0; do
  KERNELGATE_SKINNY_WGMMA=$sw $KG run --suite /tmp/sk/s.json -o /tmp/sk/t$sw.json > /tmp/sk/t$sw.log 2>&1
  echo "== KERNELGATE_SKINNY_WGMMA=$sw" | tee -a "$OUT/log-skinny.txt"
  grep -E "gemm (cuda|cublas)" /tmp/sk/t$sw.log | cut -c1-200 | tee -a "$OUT/log-skinny.txt"
done
for mnk in "1 4096 4096" "5 3000 1000"; do
  set -- $mnk
  echo "{\"description\":\"one\",\"groups\":[{\"kernel\":\"gemm\",\"backends\":[\"cuda\"],\"dtypes\":[\"bf16\"],\"shapes\":[{\"m\":$1,\"n\":$2,\"k\":$3}]}]}" > /tmp/sk/one.json
  for sw in 1 0; do
    KERNELGATE_SKINNY_WGMMA=$sw timeout 200 $NCU_BIN -k regex:gemm_ -c 4 --section SpeedOfLight --section LaunchStats \
      --section Occupancy $KG run --suite /tmp/sk/one.json --backends cuda -o /tmp/sk/n.json > /tmp/sk/ncu-$1-$sw.txt 2>&1
    echo "== ncu ${1}x${2}x${3} SKINNY_WGMMA=$sw" | tee -a "$OUT/log-skinny.txt"
    grep -E "^  [a-z_0-9]+ \(|Duration|DRAM Throughput|Grid Size|Achieved Occupancy" /tmp/sk/ncu-$1-$sw.txt | head -24 | tee -a "$OUT/log-skinny.txt"
  done
done
tar -C /tmp/sk -czf "$OUT/skinny.tar.gz" .
