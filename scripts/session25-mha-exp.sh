#!/usr/bin/env bash
# Session 25 (repo root; needs nvcc, python3 with torch): two changes to the non-causal d128
# attention suggested by Nsight Compute beside cuDNN (scripts/session25-attn-profile.sh), measured
# in the standalone bench before any of them touches kernels/mha_wgmma.cu (whose source hash
# every stored mha baseline carries):
#   wgmma    the production file
#   st3      -DMHA_WG_STAGES_D128=3: a third K/V stage at d128 (the TMA-store staging then no
#            longer fits and the epilogue stores from registers)
#   hint     a copy whose mbarrier waits spin inside PTX with a suspend-time hint
#            (scripts/session25-mha-wait.py)
#   hintst3  both
# Each is checked against the fp32 reference in every launch configuration (and with rising
# logits), then timed shape by shape beside torch SDPA (kernels/dev/mha_sdpa_table.py).
# Under $OUT: log.txt, bench.txt, sass.txt.
set -u
export OUT=${OUT:-/tmp/kgout}
DEV_TMP=/tmp/s25m
. scripts/device-lib.sh
B=/tmp/s25m/bench
mkdir -p "$B" /tmp/s25m/tree/kernels/dev
cp kernels/*.cu kernels/*.cuh /tmp/s25m/tree/kernels/ && cp kernels/dev/mha_wgmma_bench.cu /tmp/s25m/tree/kernels/dev/
python3 scripts/session25-mha-wait.py kernels/mha_wgmma.cu /tmp/s25m/tree/kernels/mha_wgmma.cu
NVCC=/usr/local/cuda/bin/nvcc
FLAGS="-O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -I kernels -lineinfo -Xptxas -v"
t0=$(date +%s)
$NVCC $FLAGS -o $B/mwb_wgmma kernels/dev/mha_wgmma_bench.cu > $B/build_wgmma.log 2>&1 &
$NVCC $FLAGS -DMHA_WG_STAGES_D128=3 -o $B/mwb_st3 kernels/dev/mha_wgmma_bench.cu > $B/build_st3.log 2>&1 &
( cd /tmp/s25m/tree && $NVCC $FLAGS -o $B/mwb_hint kernels/dev/mha_wgmma_bench.cu > $B/build_hint.log 2>&1 ) &
( cd /tmp/s25m/tree && $NVCC $FLAGS -DMHA_WG_STAGES_D128=3 -o $B/mwb_hintst3 kernels/dev/mha_wgmma_bench.cu > $B/build_hintst3.log 2>&1 ) &
wait
log "built in $(( $(date +%s) - t0 )) s: $(ls $B/mwb_* | xargs -n1 basename | tr '\n' ' ')"
for v in wgmma st3 hint hintst3; do
  grep -A4 "mha_wgmma_bf16_d128'" $B/build_$v.log | grep -oE "Used [0-9]+ registers|[0-9]+ bytes spill stores" | tr '\n' ' ' | sed "s/^/$v: /" | tee -a "$DEV_LOG"; echo | tee -a "$DEV_LOG"
  /usr/local/cuda/bin/cuobjdump -sass -fun mha_wgmma_bf16_d128 $B/mwb_$v > $B/sass_$v.txt 2>/dev/null
  echo "$v static SASS of mha_wgmma_bf16_d128: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $B/sass_$v.txt) instructions, $(grep -c SYNCS $B/sass_$v.txt) SYNCS, $(grep -cE '\bBRA\b' $B/sass_$v.txt) BRA, $(grep -c YIELD $B/sass_$v.txt) YIELD" | tee -a "$OUT/sass.txt" "$DEV_LOG"
done
rc=0
for v in wgmma st3 hint hintst3; do
  timeout 150 $B/mwb_$v --label $v --check-only > $B/check_$v.txt 2>&1 || rc=1
  MHA_BENCH_RAMP=8 timeout 150 $B/mwb_$v --label $v-ramp --check-only > $B/check_${v}_ramp.txt 2>&1 || rc=1
  log "$v checks: $(grep -c 'PASS$' $B/check_$v.txt) pass, $(grep -cE 'FAIL|ERROR|HANG' $B/check_$v.txt) fail; ramp $(grep -c 'PASS$' $B/check_${v}_ramp.txt) pass, $(grep -cE 'FAIL|ERROR|HANG' $B/check_${v}_ramp.txt) fail"
  grep -E "FAIL|ERROR|HANG" $B/check_$v.txt $B/check_${v}_ramp.txt | head -5 | tee -a "$DEV_LOG"
done
MHA_BENCH_SHAPES=${MHA_BENCH_SHAPES:-0,2,5,13,1,8} PYTHONUNBUFFERED=1 timeout 300 python3 kernels/dev/mha_sdpa_table.py $B wgmma st3 hint hintst3 > "$OUT/bench.txt" 2>&1
log "speed rc=$?"
tail -25 "$OUT/bench.txt" | tee -a "$DEV_LOG"
( cd $B && tar czf "$OUT/checks.tgz" check_*.txt build_*.log )
exit $rc
