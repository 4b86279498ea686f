#!/usr/bin/env bash
# Session 14, a fresh machine after the session's changes (repo root, .devbin/ carried):
#  1. the README's test command on the default suite (the test binary), gated against the
#     baselines in the tree;
#  2. the same binary under Nsight Compute (one GEMM case): verdict `ungated`, and
#     UPDATE_BASELINES refused while the profiler is attached.
# Under $OUT: log-fresh.txt, the results JSON, fresh.tar.gz.
set -u
OUT=${OUT:-/tmp/kgout}; mkdir -p "$OUT" /tmp/fr
export KERNELGATE_CACHE_DIR=/tmp/kgcache
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/log-fresh.txt"; }
nvidia-smi --query-gpu=name,uuid,clocks.sm,temperature.gpu,power.draw --format=csv,noheader | tee -a "$OUT/log-fresh.txt"
t0=$(date +%s)
KERNELGATE_RESULTS_DIR=/tmp/fr/res .devbin/kernels > /tmp/fr/gate.txt 2>&1
log "default suite gate: exit $? in $(( $(date +%s) - t0 )) s; $(grep -E '^test result' /tmp/fr/gate.txt)"
grep -E "^verdicts|^ambiguous|REGRESSION|WRONG|panicked|smallest slowdown|host enqueue" /tmp/fr/gate.txt | head -20 | tee -a "$OUT/log-fresh.txt"
cp "$(ls -t /tmp/fr/res/*.json | head -1)" "$OUT/results-fresh-gate.json"
NCU_BIN=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
timeout 200 $NCU_BIN -k regex:gemm_wgmma -c 1 --section SpeedOfLight .devbin/kernels --exact gemm::cuda::m4096_n4096_k4096_bf16 > /tmp/fr/ncu.txt 2>&1
log "under ncu: exit $?"
grep -E "profiler|UNGATED|ungated|test result|gemm::cuda" /tmp/fr/ncu.txt | head -8 | tee -a "$OUT/log-fresh.txt"
UPDATE_BASELINES=1 timeout 200 $NCU_BIN -k regex:gemm_wgmma -c 1 .devbin/kernels --exact gemm::cuda::m4096_n4096_k4096_bf16 > /tmp/fr/ncu-update.txt 2>&1
log "UPDATE_BASELINES=1 under ncu: exit $?"
grep -E "UPDATE_BASELINES|profiler" /tmp/fr/ncu-update.txt | head -4 | cut -c1-300 | tee -a "$OUT/log-fresh.txt"
gzip -c /tmp/fr/gate.txt > /tmp/fr/gate.txt.gz
tar -C /tmp/fr -czf "$OUT/fresh.tar.gz" gate.txt.gz ncu.txt ncu-update.txt
