#!/usr/bin/env bash
# Session 12: the cross-entropy forward variants on one GPU machine (repo root, .devbin/ carried).
# Rows bench (kernels/dev/run_rows_bench.sh), cross_entropy only: the _r column is
# rows_p.cu's warp-per-row kernel when CEB_WARPS is unset, else cross_entropy_bulk.cu's (CEB_WARPS
# warps per block); builds: 0 plain, 1 KG_CEB_POLY=1, s1 KG_CEB_STAGES=1, s3 KG_CEB_STAGES=3.
# Then Nsight Compute (when present) on both kernels at 4096 x 3072, and the harness's dsv3
# cross_entropy cases with KERNELGATE_CE_FWD=bulk against the default.
# Under $OUT: log.txt, ce.tar.gz.
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT" /tmp/s12
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log.txt"; }
nvidia-smi --query-gpu=name,uuid,clocks.max.sm --format=csv,noheader | tee -a "$OUT/log.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /usr/local/cuda/nsight-compute*/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
log "ncu: ${NCU:-none}"
for b in 0:"" 1:"-DKG_CEB_POLY=1" s1:"-DKG_CEB_STAGES=1" s3:"-DKG_CEB_STAGES=3"; do
  k=${b%%:*}; f=${b#*:}
  ( OUT_DIR=/tmp/rb$k EXTRA_NVCC_FLAGS="$f" bash kernels/dev/run_rows_bench.sh --help > /tmp/s12/build$k.log 2>&1 ) &
done
wait
CEB_WARPS=4 timeout 120 /tmp/rb0/rows_bench --check-only --fam cross_entropy > /tmp/s12/bench-check.log 2>&1
log "bench check (cross_entropy_bulk.cu in _r, 4 warps): $(grep -E 'checks:' /tmp/s12/bench-check.log | tail -1)"
grep FAIL /tmp/s12/bench-check.log | head -5 | tee -a "$OUT/log.txt"
CEB_WARPS=4 timeout 120 /tmp/rb1/rows_bench --check-only --fam cross_entropy > /tmp/s12/bench-check1.log 2>&1
log "bench check (POLY build, 4 warps): $(grep -E 'checks:' /tmp/s12/bench-check1.log | tail -1)"
for run in "0 -" "0 4" "0 8" "1 4" "s1 8" "s3 4"; do
  set -- $run
  log "bench speed: build $1, CEB_WARPS=$2"
  if [ "$2" = - ]; then unset CEB_WARPS; else export CEB_WARPS=$2; fi
  timeout 150 /tmp/rb$1/rows_bench --speed-only --fam cross_entropy > /tmp/s12/bench-$1-$2.log 2>&1
  grep -E "^cross_entropy|copy bandwidth:" /tmp/s12/bench-$1-$2.log | cut -c1-200 | tee -a "$OUT/log.txt"
done
unset CEB_WARPS
if [ -n "$NCU" ]; then
  for w in - 4; do
    if [ "$w" = - ]; then unset CEB_WARPS; k=kg_cross_entropy_bf16_r; else export CEB_WARPS=$w; k=kg_cross_entropy_bf16_b; fi
    timeout 150 $NCU -k $k -c 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
      --section Occupancy --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      /tmp/rb0/rows_bench --speed-only --fam cross_entropy --samples 1 > /tmp/s12/ncu-$k.txt 2>&1
    log "ncu $k rc=$?"
    grep -E "Duration|Throughput|Stall|Warp Cycles|Issued|Eligible|Achieved Occupancy|Pipe|Busy|Hit Rate|ERR" /tmp/s12/ncu-$k.txt | head -40 | tee -a "$OUT/log.txt"
  done
  unset CEB_WARPS
fi
$KG run --suite dsv3 --kernels cross_entropy --backends cuda --output /tmp/s12/ce-default.json > /tmp/s12/ce-d.log 2>&1
KERNELGATE_CE_FWD=bulk $KG run --suite dsv3 --kernels cross_entropy --backends cuda --output /tmp/s12/ce-bulk.json > /tmp/s12/ce-b.log 2>&1
grep -E "% of copy" /tmp/s12/ce-d.log | cut -c1-130 | sed 's/^/default /' | tee -a "$OUT/log.txt"
grep -E "% of copy" /tmp/s12/ce-b.log | cut -c1-130 | sed 's/^/bulk    /' | tee -a "$OUT/log.txt"
$KG compare /tmp/s12/ce-default.json /tmp/s12/ce-bulk.json | grep -E "cross_entropy::|FAST|SLOW|SAME" | tee -a "$OUT/log.txt"
tar -C /tmp/s12 -czf "$OUT/ce.tar.gz" .
