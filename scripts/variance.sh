#!/usr/bin/env bash
# Experiment: where does run-to-run variance of GEMM medians come from?
# Each line: how the process ran, then the median of selected cases.
set -u
B=.devbin/kernels
export KERNELGATE_RESULTS_DIR=/tmp/r KERNELGATE_CACHE_DIR=/tmp/kgcache
pick() { grep -E "^gemm::(cublas|cuda)::m(4096_n4096_k4096|8192_n8192_k8192)_bf16 " | awk '{printf "%s=%s%s ", $1, $3, $4}'; echo; }
for i in 1 2 3; do echo "exact-alone cublas8192 run $i: $($B --exact gemm::cublas::m8192_n8192_k8192_bf16 | pick)"; done
for i in 1 2 3; do echo "exact-alone cuda4096 run $i: $($B --exact gemm::cuda::m4096_n4096_k4096_bf16 | pick)"; done
for i in 1 2 3; do echo "fixed-seed cublas8192 run $i: $(KERNELGATE_SEED=7 $B --exact gemm::cublas::m8192_n8192_k8192_bf16 | pick)"; done
for i in 1 2 3; do echo "default sequential run $i: $(KERNELGATE_SUITE=default $B | pick)"; done
for i in 1 2; do echo "default 1s-warmup run $i: $(KERNELGATE_WARMUP_MS=1000 KERNELGATE_SUITE=default $B gemm:: | pick)"; done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv
