#!/usr/bin/env bash
# Session 42: the L2 prefetch-size hint on streamed loads. The gemv bench's shipped kernel with and
# without the hint (two binaries, run in turn twice), the skinny-N bench (shipped = hinted), then
# the gemm suite through the test binary (.devbin carried) for the ratios against cuBLAS.
set -u
nvidia-smi --query-gpu=name,uuid --format=csv,noheader
OUT_DIR=/tmp/grb1 bash kernels/dev/run_gemv_ring_bench.sh --shipped > "$OUT/grb-hint-1.txt" 2>&1
NVCC_EXTRA="-DKG_GEMV_PREFETCH=" OUT_DIR=/tmp/grb0 bash kernels/dev/run_gemv_ring_bench.sh --shipped > "$OUT/grb-nohint-1.txt" 2>&1
LD_LIBRARY_PATH=/usr/local/cuda/lib64 /tmp/grb1/grb --shipped > "$OUT/grb-hint-2.txt" 2>&1
LD_LIBRARY_PATH=/usr/local/cuda/lib64 /tmp/grb0/grb --shipped > "$OUT/grb-nohint-2.txt" 2>&1
bash kernels/dev/run_skinny_n_bench.sh > "$OUT/snb.txt" 2>&1
paste <(grep -E "^(bf16|fp16|fp32)|shipped|cublas" "$OUT/grb-hint-1.txt") <(grep -E "^(bf16|fp16|fp32)|shipped|cublas" "$OUT/grb-nohint-1.txt") <(grep -E "^(bf16|fp16|fp32)|shipped|cublas" "$OUT/grb-hint-2.txt") <(grep -E "^(bf16|fp16|fp32)|shipped|cublas" "$OUT/grb-nohint-2.txt") | cut -c1-250
grep -E "^(bf16|fp16|fp32)|read|cublas|shipped|v\.4\.0\.0\.0" "$OUT/snb.txt"
. scripts/device-lib.sh
for n in ${SUITES-gemm}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
