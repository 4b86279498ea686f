#!/usr/bin/env bash
# Correctness + speed of kernels/mha_wgmma.cu (Hopper TMA + wgmma attention) next to kernels/mha.cu,
# on an sm_90 GPU. Run from the repo root:  bash kernels/dev/run_mha_wgmma.sh
# Builds two variants of the bench (kernels/dev/mha_wgmma_bench.cu):
#   wgmma  = the default kernel (intra-warpgroup overlap of Q·Kᵀ with the softmax, MHA_WG_OVERLAP=1)
#   simple = the same kernel without the overlap (MHA_WG_OVERLAP=0), to localise a failure
# Each prints per-shape PASS/FAIL against an fp32 reference and a speed table. Exit status 1 if
# anything failed.
set -u
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-}
if [ -z "$NVCC" ]; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc; else NVCC=nvcc; fi
fi
OUT=${OUT_DIR:-/tmp/mha_wgmma_bench}
mkdir -p "$OUT"
FLAGS="-O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I kernels -lineinfo"
echo "== building with $NVCC ($($NVCC --version | tail -1))"
$NVCC $FLAGS -o "$OUT/mwb" kernels/dev/mha_wgmma_bench.cu > "$OUT/build.log" 2>&1 &
p1=$!
$NVCC $FLAGS -DMHA_WG_OVERLAP=0 -o "$OUT/mwb_simple" kernels/dev/mha_wgmma_bench.cu > "$OUT/build_simple.log" 2>&1 &
p2=$!
ok=1
wait $p1 || { echo "BUILD FAILED (wgmma):"; grep -v C7519 "$OUT/build.log" | head -40; ok=0; }
wait $p2 || { echo "BUILD FAILED (simple):"; grep -v C7519 "$OUT/build_simple.log" | head -40; ok=0; }
[ $ok = 1 ] || exit 1
rc=0
echo; echo "################ variant wgmma (overlap on) ################"
timeout 300 "$OUT/mwb" --label wgmma || rc=1
echo; echo "################ variant simple (overlap off) ################"
timeout 300 "$OUT/mwb_simple" --label simple || rc=1
echo
[ $rc = 0 ] && echo "run_mha_wgmma: ALL OK" || echo "run_mha_wgmma: FAILURES (see above)"
exit $rc
