#!/usr/bin/env bash
# Session 14, one H200 (repo root, .devbin/ carried): issue 13's suites and the cross-entropy
# forward on short grids.
#  1. the whole quack suite (wall time, pass count, skips) and the whole dsv3 suite, defaults;
#  2. Nsight Compute on the default cross-entropy kernel at 4096 x 3072 and 16384 x 3072
#     (throughput, pipe utilisation, warp states, occupancy) when NCU=1;
#  3. cross_entropy_bulk.cu's launches (KERNELGATE_CE_FWD=bulk:W:S[:C][:poly]) against the
#     default on the short-grid shapes (scripts/suites/ce-short.json), same binary, one after another.
# Under $OUT: log.txt, s14.tar.gz (results JSON, logs, ncu reports).
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT" /tmp/s14
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log.txt"; }
nvidia-smi --query-gpu=name,uuid,clocks.max.sm,memory.total --format=csv,noheader | tee -a "$OUT/log.txt"
if [ "${SUITES:-1}" = 1 ]; then
  for s in quack dsv3; do
    t0=$(date +%s)
    $KG run --suite $s --backends cuda --output /tmp/s14/$s.json > /tmp/s14/$s.log 2>&1
    log "$s (whole suite) rc=$? wall $(( $(date +%s) - t0 )) s: $(tail -1 /tmp/s14/$s.log)"
    grep -iE "skip|WRONG|FAIL|error" /tmp/s14/$s.log | head -8 | tee -a "$OUT/log.txt"
  done
fi
if [ "${NCU:-0}" = 1 ]; then
  NCU_BIN=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
  for mn in 4096x3072 16384x3072; do
    m=${mn%x*}; n=${mn#*x}
    printf '{"description":"ncu","groups":[{"kernel":"cross_entropy","backends":["cuda"],"dtypes":["bf16"],"grid":{"m":[%s],"n":[%s]}}]}' $m $n > /tmp/s14/one.json
    timeout 200 $NCU_BIN -k regex:kg_cross_entropy -c 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
      --section WarpStateStats --section SchedulerStats --section Occupancy --section MemoryWorkloadAnalysis \
      --section LaunchStats $KG run --suite /tmp/s14/one.json --backends cuda --output /tmp/s14/ncu-run.json > /tmp/s14/ncu-$mn.txt 2>&1
    log "ncu $mn rc=$?"
    grep -E "Duration|DRAM Throughput|Memory Throughput|Issue Slots Busy|Eligible Warps|Achieved Occupancy|Theoretical Occupancy|No Eligible|Warp Cycles Per Issued|XU|FMA|ALU|Block Limit Shared|Registers Per|Grid Size|SM Frequency" /tmp/s14/ncu-$mn.txt | head -30 | tee -a "$OUT/log.txt"
  done
fi
$KG run --suite scripts/suites/ce-short.json --backends cuda --output /tmp/s14/ce-default.json > /tmp/s14/ce-default.log 2>&1
log "ce-short default: $(tail -1 /tmp/s14/ce-default.log)"
grep -E "% of copy" /tmp/s14/ce-default.log | cut -c1-140 | tee -a "$OUT/log.txt"
for c in ${CE_VARIANTS:-bulk:4:2 bulk:8:1 bulk:4:2:2 bulk:4:2:4 bulk:8:1:2 bulk:8:1:4 bulk:16:1:2 bulk:8:2:2 bulk:4:2:poly bulk:8:1:2:poly}; do
  KERNELGATE_CE_FWD=$c $KG run --suite scripts/suites/ce-short.json --backends cuda --output /tmp/s14/ce-$c.json > /tmp/s14/ce-$c.log 2>&1
  log "ce-short $c: $(tail -1 /tmp/s14/ce-$c.log)"
  $KG compare /tmp/s14/ce-default.json /tmp/s14/ce-$c.json | grep -E "cross_entropy::" | cut -c1-150 | tee -a "$OUT/log.txt"
done
tar -C /tmp/s14 -czf "$OUT/s14.tar.gz" .
