#!/usr/bin/env bash
# Session 25 (repo root; needs nvcc, python3 with torch): changes to the non-causal d128
# attention suggested by Nsight Compute beside cuDNN (scripts/session25-attn-profile.sh), measured
# in the standalone bench before any of them touches kernels/mha_wgmma.cu (whose source hash
# every stored mha baseline carries). VARIANTS (default "wgmma desc descu"), each built from:
#   wgmma    the production file
#   st3      -DMHA_WG_STAGES_D128=3: a third K/V stage at d128 (the TMA-store staging then no
#            longer fits and the epilogue stores from registers)
#   hint     a copy whose mbarrier waits spin inside PTX with a suspend-time hint
#            (scripts/session25-mha-wait.py)
#   hintst3  both
#   desc     a copy whose K/V wgmma descriptors are built once and advanced by offset
#            (scripts/session25-mha-desc.py): static SASS of mha_wgmma_bf16_d128 2,912 -> 2,840
#            instructions (LOP3 165 -> 113, SHF 70 -> 35; nvcc 13 here, nvdisasm)
#   descu    desc with the consumers' tile index broadcast from lane 0 (`uniform`): the same
#            R2UR count here, so the descriptors did not move to uniform registers
# Each is checked against the fp32 reference in every launch configuration (and with rising
# logits), then timed shape by shape beside torch SDPA (kernels/dev/mha_sdpa_table.py).
# Measured on H100 d20a2be8 with VARIANTS="wgmma st3 hint hintst3": all correct, the production
# file fastest (st3 0.96-0.97x, hint 0.98-1.00x; hint spilled 172 bytes), docs/kernels/session25.
# Under $OUT: log.txt, bench.txt, sass.txt, checks.tgz.
set -u
export OUT=${OUT:-/tmp/kgout}
DEV_TMP=/tmp/s25m
. scripts/device-lib.sh
B=/tmp/s25m/bench
mkdir -p "$B"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
FLAGS="-O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I kernels -lineinfo -Xptxas -v"
VARIANTS=${VARIANTS:-wgmma desc descu}
# tree_of V: the source tree variant V is built from (the repo, or a patched copy).
tree_of() {
  case $1 in
    hint|hintst3) echo /tmp/s25m/tree-hint ;;
    desc) echo /tmp/s25m/tree-desc ;;
    descu) echo /tmp/s25m/tree-descu ;;
    *) echo . ;;
  esac
}
for t in hint desc descu; do
  mkdir -p /tmp/s25m/tree-$t/kernels/dev
  cp kernels/*.cu kernels/*.cuh /tmp/s25m/tree-$t/kernels/ && cp kernels/dev/mha_wgmma_bench.cu /tmp/s25m/tree-$t/kernels/dev/
done
python3 scripts/session25-mha-wait.py kernels/mha_wgmma.cu /tmp/s25m/tree-hint/kernels/mha_wgmma.cu
python3 scripts/session25-mha-desc.py kernels/mha_wgmma.cu /tmp/s25m/tree-desc/kernels/mha_wgmma.cu
python3 scripts/session25-mha-desc.py kernels/mha_wgmma.cu /tmp/s25m/tree-descu/kernels/mha_wgmma.cu uniform
t0=$(date +%s)
for v in $VARIANTS; do
  case $v in *st3) def=-DMHA_WG_STAGES_D128=3 ;; *) def= ;; esac
  ( cd "$(tree_of $v)" && $NVCC $FLAGS $def -o $B/mwb_$v kernels/dev/mha_wgmma_bench.cu > $B/build_$v.log 2>&1 ) &
done
wait
log "built in $(( $(date +%s) - t0 )) s: $(ls $B/mwb_* | xargs -n1 basename | tr '\n' ' ')"
for v in $VARIANTS; do
  grep -A4 "mha_wgmma_bf16_d128'" $B/build_$v.log | grep -oE "Used [0-9]+ registers|[0-9]+ bytes spill stores" | tr '\n' ' ' | sed "s/^/$v: /" | tee -a "$DEV_LOG"; echo | tee -a "$DEV_LOG"
  /usr/local/cuda/bin/cuobjdump -sass -fun mha_wgmma_bf16_d128 $B/mwb_$v > $B/sass_$v.txt 2>/dev/null
  echo "$v static SASS of mha_wgmma_bf16_d128: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $B/sass_$v.txt) instructions, $(grep -c SYNCS $B/sass_$v.txt) SYNCS, $(grep -cE '\bBRA\b' $B/sass_$v.txt) BRA, $(grep -c YIELD $B/sass_$v.txt) YIELD, $(grep -c LOP3 $B/sass_$v.txt) LOP3, $(grep -c R2UR $B/sass_$v.txt) R2UR" | tee -a "$OUT/sass.txt" "$DEV_LOG"
done
rc=0
for v in $VARIANTS; do
  timeout 150 $B/mwb_$v --label $v --check-only > $B/check_$v.txt 2>&1 || rc=1
  MHA_BENCH_RAMP=8 timeout 150 $B/mwb_$v --label $v-ramp --check-only > $B/check_${v}_ramp.txt 2>&1 || rc=1
  log "$v checks: $(grep -c 'PASS$' $B/check_$v.txt) pass, $(grep -cE 'FAIL|ERROR|HANG' $B/check_$v.txt) fail; ramp $(grep -c 'PASS$' $B/check_${v}_ramp.txt) pass, $(grep -cE 'FAIL|ERROR|HANG' $B/check_${v}_ramp.txt) fail"
  grep -E "FAIL|ERROR|HANG" $B/check_$v.txt $B/check_${v}_ramp.txt | head -5 | tee -a "$DEV_LOG"
done
MHA_BENCH_SHAPES=${MHA_BENCH_SHAPES:-0,2,5,13,1,8} PYTHONUNBUFFERED=1 timeout 300 python3 kernels/dev/mha_sdpa_table.py $B $VARIANTS > "$OUT/bench.txt" 2>&1
log "speed rc=$?"
tail -25 "$OUT/bench.txt" | tee -a "$DEV_LOG"
( cd $B && tar czf "$OUT/checks.tgz" check_*.txt build_*.log )
exit $rc
