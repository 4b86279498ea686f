#!/usr/bin/env bash
# Session 15 (repo root, .devbin/ carried): split-K joined inside the GEMM launch (no reduction
# kernel). Part `bench`: the standalone bench (every tile x split, bf16, checks incl. bitwise
# run-to-run equality, then timings next to cuBLAS) and gemm_edges through the harness with the
# pick and with 3 and 16 forced splits. Part `suite`: the gemm suite with cuBLAS in the same run,
# the split-K sweep suite with forced splits, and the dsv3 cross-entropy cases (norms.rs refactor).
# Under $OUT: log-<part>.txt and the result files.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/j
export KERNELGATE_CACHE_DIR=/tmp/kgcache
KG=.devbin/kernelgate
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log-$1.txt"; }
part=${1:-bench}
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee -a "$OUT/log-$part.txt"
if [ "$part" = bench ]; then
  OUT_DIR=/tmp/gwb bash kernels/dev/run_gemm_wgmma_bench.sh --bf16 > "$OUT/bench-bf16.txt" 2>&1
  log bench "standalone bench exit $?: $(grep -c FAIL "$OUT/bench-bf16.txt") FAIL lines"
  for sp in pick 3 16; do
    if [ $sp = pick ]; then e=""; else e="KERNELGATE_GEMM_SPLITK=$sp"; fi
    env $e $KG run --suite gemm_edges --backends cuda -o /tmp/j/edges-$sp.json > /tmp/j/edges-$sp.log 2>&1
    log bench "gemm_edges split $sp: exit $? $(tail -1 /tmp/j/edges-$sp.log)"
    grep -E "WRONG|ERROR|panick" /tmp/j/edges-$sp.log | head -5 | cut -c1-220 | tee -a "$OUT/log-bench.txt"
  done
  tar -C /tmp/j -czf "$OUT/edges.tar.gz" .
else
  $KG run --suite gemm --backends cuda,cublas -o "$OUT/gemm.json" > /tmp/j/gemm.log 2>&1
  log suite "gemm suite: exit $? $(tail -1 /tmp/j/gemm.log)"
  grep -E "WRONG|ERROR|panick" /tmp/j/gemm.log | head -5 | cut -c1-220 | tee -a "$OUT/log-suite.txt"
  python3 scripts/gemm-table.py "$OUT/gemm.json" >> "$OUT/log-suite.txt" 2>&1
  for v in pick "SPLITK=1" "SPLITK=2" "SPLITK=4" "SPLITK=8"; do
    envs=""; [ $v != pick ] && envs="KERNELGATE_GEMM_$v"
    env $envs $KG run --suite scripts/suites/splitk.json --backends cuda -o "/tmp/j/spk-$v.json" > "/tmp/j/spk-$v.log" 2>&1
    log suite "splitk $v: exit $? $(tail -1 /tmp/j/spk-$v.log)"
    grep -E "gemm cuda" "/tmp/j/spk-$v.log" | sed -E 's/ \(tma[^)]*\)//' | cut -c1-120 | tee -a "$OUT/log-suite.txt"
  done
  $KG run --suite dsv3 --kernels cross_entropy --backends cuda -o "$OUT/dsv3-ce.json" > /tmp/j/ce.log 2>&1
  log suite "dsv3 cross_entropy: exit $? $(tail -1 /tmp/j/ce.log)"
  grep -E "cross_entropy cuda" /tmp/j/ce.log | cut -c1-140 | tee -a "$OUT/log-suite.txt"
  tar -C /tmp/j -czf "$OUT/suite.tar.gz" .
fi
