#!/usr/bin/env bash
# Correctness + speed of kernels/mha_wgmma.cu (Hopper TMA + wgmma attention) on an sm_90 GPU, with
# torch SDPA timed on the same shapes, shape by shape, in the same run. Run from the repo root:
#   bash kernels/dev/run_mha_wgmma.sh            (about 2 minutes on an H200 or H100)
# Builds four compile-time variants of the bench (kernels/dev/mha_wgmma_bench.cu):
#   wgmma    = the defaults (persistent-capable, TMA-store epilogue, intra-WG overlap, ping-pong,
#              Q in registers for Q·Kᵀ at d128): what the Rust harness runs
#   smemq    = -DMHA_WG_QREG=0      Q·Kᵀ reads Q from shared memory at d128 too
#   regstore = -DMHA_WG_TMA_STORE=0 O stored straight from registers (the old epilogue)
#   simple   = -DMHA_WG_OVERLAP=0 -DMHA_WG_PINGPONG=0 (debug fallback; correctness only)
#   noring   = -DMHA_WG_RING=0       ping-pong order closed per tile (no turn ring across tiles)
#   bn160/bn176/bn192 = -DMHA_WG_BN_D128=N: key tile N for the non-causal d128 entries (Q·Kᵀ
#              from shared memory; no TMA-store staging at 176 and 192, where it does not fit)
# Each checks every shape against an fp32 reference in every launch configuration (BM 128/192,
# one CTA per tile, persistent static, persistent dynamic, few CTAs; the mma.sync kernel too) and
# prints PASS/FAIL per shape x dtype. Then kernels/dev/mha_sdpa_table.py times, shape by shape,
# every speed variant's launch configurations (interleaved; `auto` = the Rust launcher's choice)
# and torch SDPA on the same shape, and prints the same-run table with ratios.
# Env: OUT_DIR (default /tmp/mha_wgmma_bench), NVCC, VARIANTS (default "wgmma smemq regstore
# simple"), SPEED_VARIANTS (default "wgmma smemq regstore"; empty: checks only), MHA_BENCH_SHAPES (speed shape
# indices, e.g. 0,2,5; default all), CHECK_TIMEOUT (per variant, default 150 s), RAMP (default 8:
# every variant is checked a second time with MHA_BENCH_RAMP=RAMP, keys scaled up along the
# sequence so row maxima rise across tiles and the rescale paths run; 0 skips that pass).
# Exit status 1 if anything failed.
set -u
cd "$(dirname "$0")/../.."
NVCC=${NVCC:-}
if [ -z "$NVCC" ]; then
  if [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc; else NVCC=nvcc; fi
fi
OUT=${OUT_DIR:-/tmp/mha_wgmma_bench}
VARIANTS=${VARIANTS:-wgmma smemq regstore simple}
SPEED_VARIANTS=${SPEED_VARIANTS-wgmma smemq regstore}
mkdir -p "$OUT"
# -gencode, not -arch=sm_90a: nvcc 13's -arch=sm_90a also embeds compute_90 PTX, which cannot hold wgmma.
FLAGS="-O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I kernels -lineinfo -Xptxas -v"
flags_of() {
  case $1 in
    wgmma) echo "" ;;
    smemq) echo "-DMHA_WG_QREG=0" ;;
    regstore) echo "-DMHA_WG_TMA_STORE=0" ;;
    simple) echo "-DMHA_WG_OVERLAP=0 -DMHA_WG_PINGPONG=0" ;;
    noring) echo "-DMHA_WG_RING=0" ;;
    bn160) echo "-DMHA_WG_BN_D128=160" ;;
    bn176) echo "-DMHA_WG_BN_D128=176" ;;
    bn192) echo "-DMHA_WG_BN_D128=192" ;;
    *) echo "unknown variant $1" >&2; exit 2 ;;
  esac
}
echo "== building with $NVCC ($($NVCC --version | tail -1)): $VARIANTS"
t0=$(date +%s)
pids=""
for v in $VARIANTS; do
  $NVCC $FLAGS $(flags_of $v) -o "$OUT/mwb_$v" kernels/dev/mha_wgmma_bench.cu > "$OUT/build_$v.log" 2>&1 &
  pids="$pids $!"
done
ok=1
i=0
for p in $pids; do
  i=$((i + 1))
  v=$(echo $VARIANTS | cut -d' ' -f$i)
  wait $p || { echo "BUILD FAILED ($v):"; grep -v C7519 "$OUT/build_$v.log" | grep -v "ptxas info\|bytes stack" | head -40; ok=0; }
done
[ $ok = 1 ] || exit 1
echo "built in $(( $(date +%s) - t0 )) s"
# ptxas per wgmma entry: registers at launch (the consumers' setmaxnreg budget is 240 for BM 128,
# 160 for BM 192), spills, barriers.
for v in $VARIANTS; do
  echo "-- ptxas, variant $v"
  awk '/Compiling entry function .mha_wgmma_/ {match($0, /mha_wgmma_[a-z0-9_]+/); f=substr($0, RSTART, RLENGTH); next}
       f != "" && /spill stores/ {sp=$0; sub(/^ +/, "", sp); next}
       f != "" && /Used [0-9]+ registers/ {match($0, /Used [0-9]+ registers/); printf "   %-34s %s, %s\n", f, substr($0, RSTART, RLENGTH), sp; f=""}' \
    "$OUT/build_$v.log" | sort -u
done
# Highest register any thread of each entry touches (the consumers, after setmaxnreg.inc).
CUOBJDUMP=$(dirname "$NVCC")/cuobjdump
v0=$(echo $VARIANTS | cut -d' ' -f1)
if [ -x "$CUOBJDUMP" ]; then
  echo "-- highest register used by the consumer code (variant $v0; budget 240 at BM 128, 160 at BM 192)"
  for f in $("$CUOBJDUMP" -sass "$OUT/mwb_$v0" 2>/dev/null | grep -oE "Function : mha_wgmma_[a-z0-9_]+" | awk '{print $3}' | sort -u); do
    echo "   $f: R$("$CUOBJDUMP" -sass -fun $f "$OUT/mwb_$v0" 2>/dev/null | grep -oE '\bR[0-9]+\b' | tr -d R | sort -n | tail -1)"
  done
  # MHA_WG_QREG keeps Q in registers across the key loop while P is rebuilt every step; a
  # ptxas that gave both the same registers (seen with -DMHA_WG_OVERLAP=0) computes garbage.
  for f in mha_wgmma_bf16_d128 mha_wgmma_fp16_d128_causal; do
    "$CUOBJDUMP" -sass -fun $f "$OUT/mwb_$v0" 2>/dev/null > "$OUT/sass_$f.txt"
    q=$(grep -oE "LDSM[.A-Z0-9]* R[0-9]+" "$OUT/sass_$f.txt" | grep -oE "[0-9]+$" | sort -u)
    p=$(grep -oE "F2FP[.A-Z0-9_]* R[0-9]+" "$OUT/sass_$f.txt" | grep -oE "[0-9]+$" | sort -u)
    clash=""
    for r in $q; do for i in 0 1 2 3; do echo "$p" | grep -qx $((r + i)) && clash="$clash R$((r + i))"; done; done
    echo "   $f Q-fragment registers vs P conversion: ${clash:-no overlap (OK)}"
    rm -f "$OUT/sass_$f.txt"
  done
fi
rc=0
for v in $VARIANTS; do
  echo; echo "################ correctness, variant $v ($(flags_of $v)) ################"
  timeout ${CHECK_TIMEOUT:-150} "$OUT/mwb_$v" --label $v --check-only > "$OUT/check_$v.txt" 2>&1 || rc=1
  # Every shape's PASS/FAIL line for the first variant; failures only for the others.
  if [ $v = $v0 ]; then cat "$OUT/check_$v.txt"; else
    grep -E "^device|BM|FAIL|ERROR|HANG|job|correctness|ALL OK|SOME" "$OUT/check_$v.txt"; fi
  echo "  $(grep -c "PASS$" "$OUT/check_$v.txt") shape x dtype checks passed (each: mma + every wgmma launch config)"
  if [ "${RAMP:-8}" != 0 ]; then
    MHA_BENCH_RAMP=${RAMP:-8} timeout ${CHECK_TIMEOUT:-150} "$OUT/mwb_$v" --label $v-ramp --check-only > "$OUT/check_${v}_ramp.txt" 2>&1 || rc=1
    grep -E "FAIL|ERROR|HANG|ALL OK|SOME" "$OUT/check_${v}_ramp.txt"
    echo "  rising logits (MHA_BENCH_RAMP=${RAMP:-8}): $(grep -c "PASS$" "$OUT/check_${v}_ramp.txt") shape x dtype checks passed"
  fi
done
if [ -n "$SPEED_VARIANTS" ]; then
  echo; echo "################ speed, shape by shape: variants $SPEED_VARIANTS, then torch SDPA ################"
  PYTHONUNBUFFERED=1 timeout 330 python3 kernels/dev/mha_sdpa_table.py "$OUT" $SPEED_VARIANTS || rc=1
fi
echo "total $(( $(date +%s) - t0 )) s"
[ $rc = 0 ] && echo "run_mha_wgmma: ALL OK" || echo "run_mha_wgmma: FAILURES (see above)"
exit $rc
