#!/usr/bin/env bash
# Correctness + speed of kernels/mha_wgmma.cu (Hopper TMA + wgmma attention) next to kernels/mha.cu,
# on an sm_90 GPU. Run from the repo root:  bash kernels/dev/run_mha_wgmma.sh
# Builds three variants of the bench (kernels/dev/mha_wgmma_bench.cu), to localise a failure:
#   wgmma   = the default kernel (intra-warpgroup overlap + ping-pong: what the Rust harness runs)
#   overlap = intra-warpgroup overlap only        (-DMHA_WG_PINGPONG=0)
#   simple  = neither overlap feature              (-DMHA_WG_OVERLAP=0 -DMHA_WG_PINGPONG=0)
# Each prints per-shape PASS/FAIL against an fp32 reference (the mma.sync kernel of mha.cu is
# checked too) and a same-run speed table. Exit status 1 if anything failed.
set -u
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-}
if [ -z "$NVCC" ]; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc; else NVCC=nvcc; fi
fi
OUT=${OUT_DIR:-/tmp/mha_wgmma_bench}
mkdir -p "$OUT"
# -gencode, not -arch=sm_90a: nvcc 13's -arch=sm_90a also embeds compute_90 PTX, which cannot hold wgmma.
FLAGS="-O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I kernels -lineinfo"
echo "== building with $NVCC ($($NVCC --version | tail -1))"
$NVCC $FLAGS -o "$OUT/mwb" kernels/dev/mha_wgmma_bench.cu > "$OUT/build.log" 2>&1 &
p1=$!
$NVCC $FLAGS -DMHA_WG_PINGPONG=0 -o "$OUT/mwb_overlap" kernels/dev/mha_wgmma_bench.cu > "$OUT/build_overlap.log" 2>&1 &
p2=$!
$NVCC $FLAGS -DMHA_WG_OVERLAP=0 -DMHA_WG_PINGPONG=0 -o "$OUT/mwb_simple" kernels/dev/mha_wgmma_bench.cu > "$OUT/build_simple.log" 2>&1 &
p3=$!
ok=1
wait $p1 || { echo "BUILD FAILED (wgmma):"; grep -v C7519 "$OUT/build.log" | head -40; ok=0; }
wait $p2 || { echo "BUILD FAILED (overlap):"; grep -v C7519 "$OUT/build_overlap.log" | head -40; ok=0; }
wait $p3 || { echo "BUILD FAILED (simple):"; grep -v C7519 "$OUT/build_simple.log" | head -40; ok=0; }
[ $ok = 1 ] || exit 1
rc=0
echo; echo "################ variant wgmma (overlap + ping-pong: the default) ################"
timeout 200 "$OUT/mwb" --label wgmma || rc=1
echo; echo "################ variant overlap (no ping-pong) ################"
timeout 200 "$OUT/mwb_overlap" --label overlap || rc=1
echo; echo "################ variant simple (no overlap, no ping-pong) ################"
timeout 200 "$OUT/mwb_simple" --label simple || rc=1
echo
[ $rc = 0 ] && echo "run_mha_wgmma: ALL OK" || echo "run_mha_wgmma: FAILURES (see above)"
exit $rc
