#!/usr/bin/env bash
# Session 28 (repo root, nvcc, cuBLAS and Nsight Compute on the machine): why the 128x192 tile
# (the pick at 3072^3) delivers ~14% fewer FLOP/s than 128x256 on the squares. Builds the dev
# GEMM bench and profiles one launch each (--set full) of 128x256, 128x192 and cuBLAS's kernel at
# SHAPE (default 3072x3072x3072), bf16: duration, clocks, tensor-pipe activity, L1/L2
# throughput, issue activity and every warp-stall sampling counter.
# Under $OUT: log-ncu-tiles.txt (key lines), ncu-tiles.tar.gz (the full text reports).
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT" /tmp/nt
LOG=$OUT/log-ncu-tiles.txt
CUDA=${CUDA_HOME:-/usr/local/cuda}
NCU_BIN=$(command -v ncu || ls $CUDA/bin/ncu 2>/dev/null | head -1)
SHAPE=${SHAPE:-3072x3072x3072}
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee -a "$LOG"
if ! $CUDA/bin/nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I kernels \
    -o /tmp/nt/gwb kernels/dev/gemm_wgmma_bench.cu -L"$CUDA/lib64" -lcuda -lcublas > /tmp/nt/build.log 2>&1; then
  echo "BUILD FAILED" | tee -a "$LOG"; head -30 /tmp/nt/build.log | tee -a "$LOG"; exit 2
fi
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"
for w in 128x256 128x192 cublas; do
  if [ $w = cublas ]; then re='regex:nvjet|xmma|cutlass'; tiles=128x256; else re="regex:^gemm_wgmma_bf16_${w}\$"; tiles=$w; fi
  timeout 240 $NCU_BIN -k "$re" -s 3 -c 1 --set full --print-details all --page details \
    /tmp/nt/gwb --shape "$SHAPE" --bf16 --tiles "$tiles" --reps 5 > /tmp/nt/ncu-$w.txt 2>&1
  echo "== ncu $w $SHAPE rc=$?" | tee -a "$LOG"
  grep -E "^  [a-zA-Z_].*\(.*\)x\(|Duration|SM Frequency  |L1/TEX Cache Throughput|L2 Cache Throughput|DRAM Throughput|Pipe Tensor Cycles Active|Issue Slots Busy|No Eligible|Registers Per Thread|Cluster Size|Elapsed Cycles|SM Active Cycles|smsp__pcsamp_warps_issue_stalled" /tmp/nt/ncu-$w.txt \
    | grep -v " 0$" | awk '!seen[$0]++' | head -50 | cut -c1-170 | tee -a "$LOG"
done
tar -C /tmp/nt -czf "$OUT/ncu-tiles.tar.gz" ncu-128x256.txt ncu-128x192.txt ncu-cublas.txt build.log
