#!/usr/bin/env bash
# Session 12: launch configurations of cross_entropy_bulk.cu on an H200 (repo root, .devbin/
# carried). Rows bench (cross_entropy): rows_p.cu's _r, then the _b/_bp kernel at CEB_WARPS x
# CEB_STAGES (CEB_POLY=1: _bp), builds with KG_CEB_UNROLL 1 and 2, each checked then timed;
# the harness's dsv3 cross_entropy cases with KERNELGATE_CE_FWD=bulk:W:S[:poly] against the
# default; on an H200 the whole quack suite with bulk:8:1 forced. NCU=1 first profiles rows_p.cu's
# _r and the _b kernel (4 x 2) at 4096 x 3072 with Nsight Compute (occupancy, warp states).
# Under $OUT: log.txt, ce2.tar.gz.
set -u
OUT=${OUT:-/tmp/kgout}
mkdir -p "$OUT" /tmp/s12
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log.txt"; }
nvidia-smi --query-gpu=name,uuid,clocks.max.sm --format=csv,noheader | tee -a "$OUT/log.txt"
for b in u1:"" u2:"-DKG_CEB_UNROLL=2"; do
  k=${b%%:*}; f=${b#*:}
  ( OUT_DIR=/tmp/rb$k EXTRA_NVCC_FLAGS="$f" bash kernels/dev/run_rows_bench.sh --help > /tmp/s12/build$k.log 2>&1 ) &
done
wait
bench() {  # bench BUILD WARPS STAGES POLY (WARPS - : rows_p.cu's _r)
  local tag="$1-$2-$3-$4"
  if [ "$2" = - ]; then unset CEB_WARPS; else export CEB_WARPS=$2 CEB_STAGES=$3 CEB_POLY=$4; fi
  if [ "$2" != - ]; then
    timeout 60 /tmp/rb$1/rows_bench --check-only --fam cross_entropy > /tmp/s12/check-$tag.log 2>&1
    log "check $tag: $(grep -E 'checks:' /tmp/s12/check-$tag.log | tail -1)"
  fi
  timeout 100 /tmp/rb$1/rows_bench --speed-only --fam cross_entropy > /tmp/s12/speed-$tag.log 2>&1
  log "speed $tag (build, warps, stages, poly): _r/_b column at 4096x3072 4096x6144 4096x8192 16384x3072 16384x6144 65536x3072"
  grep -E "^cross_entropy +(4096|16384|65536) +(3072|6144|8192) " /tmp/s12/speed-$tag.log \
    | awk '{printf "  %sx%s p %s r %s\n", $2, $3, $9, $12}' | tee -a "$OUT/log.txt"
  unset CEB_WARPS CEB_STAGES CEB_POLY
}
if [ "${NCU:-0}" = 1 ]; then
  NCU_BIN=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
  for w in - 4; do
    if [ "$w" = - ]; then k=kg_cross_entropy_bf16_r; else export CEB_WARPS=$w CEB_STAGES=2; k=kg_cross_entropy_bf16_b; fi
    timeout 150 $NCU_BIN -k $k -c 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
      --section Occupancy /tmp/rbu1/rows_bench --speed-only --fam cross_entropy --samples 1 > /tmp/s12/ncu-$k.txt 2>&1
    log "ncu $k rc=$?"
    unset CEB_WARPS CEB_STAGES
  done
fi
bench u1 - - -
for c in "4 2 0" "8 1 0" "8 2 0" "4 3 0" "16 1 0" "4 2 1" "8 1 1"; do bench u1 $c; done
for c in "4 2 0" "8 1 0"; do bench u2 $c; done
$KG run --suite dsv3 --kernels cross_entropy --backends cuda --output /tmp/s12/h-default.json > /tmp/s12/h-default.log 2>&1
for c in bulk:4:2 bulk:8:1 bulk:8:1:poly bulk:4:2:poly bulk:16:1; do
  KERNELGATE_CE_FWD=$c $KG run --suite dsv3 --kernels cross_entropy --backends cuda --output /tmp/s12/h-$c.json > /tmp/s12/h-$c.log 2>&1
  log "harness dsv3 cross_entropy $c against the default: $(tail -1 /tmp/s12/h-$c.log)"
  $KG compare /tmp/s12/h-default.json /tmp/s12/h-$c.json | grep -E "cross_entropy::|FAST|SLOW" | tee -a "$OUT/log.txt"
done
grep -E "% of copy" /tmp/s12/h-default.log | cut -c1-130 | tee -a "$OUT/log.txt"
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  for c in bulk:8:1; do
    t0=$(date +%s)
    KERNELGATE_CE_FWD=$c $KG run --suite quack --backends cuda --output /tmp/s12/q-$c.json > /tmp/s12/q-$c.log 2>&1
    log "quack (whole suite) with $c rc=$? wall $(( $(date +%s) - t0 )) s: $(tail -1 /tmp/s12/q-$c.log)"
    grep -iE "skip|WRONG|FAIL" /tmp/s12/q-$c.log | head -5 | tee -a "$OUT/log.txt"
  done
fi
tar -C /tmp/s12 -czf "$OUT/ce2.tar.gz" .
