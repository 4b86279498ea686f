#!/usr/bin/env bash
# Session 42: the skinny-N bench (shipped = the hinted kernels, fp32's common step restructured),
# then the gemm_mtc L2 prefetch-size patch against an unpatched copy through the harness
# (scripts/ab-variants.sh, mtc41 suite, each launch alone), then the gemm suite.
set -u
nvidia-smi --query-gpu=name,uuid --format=csv,noheader
bash kernels/dev/run_skinny_n_bench.sh > "$OUT/snb.txt" 2>&1
grep -E "^(bf16|fp16|fp32)|read|cublas|shipped|skn.1.2|skn.2.2" "$OUT/snb.txt"
KERNELGATE_BATCH=1 PATCH_FILE=gemm_mtc.cu SUITE=scripts/suites/mtc41.json VARIANTS="aa:- pf:kernels/dev/mtc_prefetch_patch.py" ROUNDS=2 bash scripts/ab-variants.sh > /dev/null 2>&1
grep -E "pf-" "$OUT/ab-table.md" | head -60
. scripts/device-lib.sh
for n in ${SUITES-gemm}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
