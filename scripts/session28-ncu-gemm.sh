#!/usr/bin/env bash
# Session 28 (repo root, .devbin/ carried): Nsight Compute of our bf16 GEMM (gemm_wgmma, the
# automatic tile) beside cuBLAS's kernel on the squares 2048^3 and 4096^3, one launch each
# (--set full): duration, clocks, tensor-pipe activity, L2/DRAM throughput, stall reasons,
# launch shape (grid, block, cluster, registers, shared memory), to find where the squares'
# 3-6% gap to cuBLAS (issue 12) sits.
# Under $OUT: ncu-gemm.tar.gz and the key lines in log-ncu-gemm.txt.
set -u
OUT=${OUT:-/tmp/kgout}
DEV_LOG=$OUT/log-ncu-gemm.txt
. scripts/device-lib.sh
mkdir -p /tmp/ncug
NCU_BIN=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
for n in 2048 4096; do
  for be in cuda cublas; do
    echo "{\"description\":\"ncu gemm\",\"groups\":[{\"kernel\":\"gemm\",\"backends\":[\"$be\"],\"dtypes\":[\"bf16\"],\"shapes\":[{\"m\":$n,\"n\":$n,\"k\":$n}]}]}" > /tmp/ncug/s.json
    re='regex:gemm_wgmma'; [ $be = cublas ] && re='regex:nvjet|xmma|cutlass|gemm'
    timeout 200 $NCU_BIN -k "$re" -s 5 -c 1 --set full --print-details all --page details \
      -o /tmp/ncug/$be-$n .devbin/kernelgate run --suite /tmp/ncug/s.json --backends $be \
      --output /tmp/ncug/r-$be-$n.json > /tmp/ncug/ncu-$be-$n.txt 2>&1
    echo "== ncu $be $n rc=$?" | tee -a "$DEV_LOG"
    grep -E "^  [a-zA-Z_].*\(|Duration|SM Frequency|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Executed Ipc A|No Eligible|Registers Per|Grid Size|Block Size|Cluster Size|Dynamic Shared|Waves Per SM|Stall|Tensor|L2 Hit|Mem Busy|Max Bandwidth" /tmp/ncug/ncu-$be-$n.txt | head -45 | cut -c1-200 | tee -a "$DEV_LOG"
  done
done
rm -f /tmp/ncug/*.ncu-rep
tar -C /tmp/ncug -czf "$OUT/ncu-gemm.tar.gz" .
