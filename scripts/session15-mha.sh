#!/usr/bin/env bash
# Session 15 (repo root, .devbin/ carried, .devbin/base/kernels = the kernels before the change):
# lazy O rescaling in kernels/mha_wgmma.cu (MHA_WG_LAZY). Part `bench`: the standalone bench's
# checks for the default build and -DMHA_WG_LAZY=0 (every shape, every launch configuration), then
# both timed interleaved next to torch SDPA on the bar shapes. Part `harness`: mha_edges and the
# attention suite's correctness through the harness, attention_bars with torch SDPA in the same
# run, then the paired A/B against the base kernels (same buffers, alternating launches).
# Under $OUT: log-<part>.txt and result files.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/m
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
part=${1:-bench}
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log-$part.txt"; }
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee -a "$OUT/log-$part.txt"
if [ "$part" = bench ]; then
  VARIANTS="wgmma eager" SPEED_VARIANTS="wgmma eager" MHA_BENCH_SHAPES=${SHAPES:-0,1,2,3,13,14,8} \
    OUT_DIR=/tmp/mwb bash kernels/dev/run_mha_wgmma.sh > "$OUT/bench.txt" 2>&1
  log "standalone bench exit $?"
  grep -E "FAIL|clash|geomean|PASS.*of" "$OUT/bench.txt" | head -20 | tee -a "$OUT/log-$part.txt"
else
  $KG run --suite mha_edges --backends cuda -o /tmp/m/edges.json > /tmp/m/edges.log 2>&1
  log "mha_edges: exit $? $(tail -1 /tmp/m/edges.log)"
  $KG run --suite attention_bars --backends cuda,torch -o "$OUT/bars.json" > /tmp/m/bars.log 2>&1
  log "attention_bars: exit $? $(tail -1 /tmp/m/bars.log)"
  grep -E "mha (cuda|torch)" /tmp/m/bars.log | sed -E 's/ \(tma[^)]*\)//' | cut -c1-150 | tee -a "$OUT/log-$part.txt"
  $KG run --suite attention_bars --backends cuda --base .devbin/base -o "$OUT/bars-ab.json" > /tmp/m/ab.log 2>&1
  log "paired A/B against the base kernels: exit $? $(tail -1 /tmp/m/ab.log)"
  grep -E "mha cuda|faster|slower|same" /tmp/m/ab.log | cut -c1-170 | head -40 | tee -a "$OUT/log-$part.txt"
  tar -C /tmp/m -czf "$OUT/mha.tar.gz" .
fi
