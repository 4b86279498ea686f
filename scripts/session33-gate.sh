#!/usr/bin/env bash
# Session 33, one fresh machine (repo root, .devbin/ carried, nvcc + cuBLAS): the wgmma GEMM
# with staging boxes by a running count and TMA-store entries for 128x64 and 192x192 (its
# source hash moved, so every gemm_wgmma entry restarts on import).
# 1. GATE: the gemm cases of SUITES (default "default gemm gemm_edges") through the CLI against
#    the committed baselines: correctness of every gemm case, and the change's effect on each
#    stored latency.
# 2. A/B through the harness (AB=1, default): scripts/suites/ts33.json (the shapes whose pick
#    now stores through TMA, ours and cuBLAS) under KERNELGATE_GEMM_EPILOGUE=tma and =regs,
#    ROUNDS interleaved rounds, ranked.
# 3. The dev bench's checks of every tile (the _ts rows and the _regs ones), every bench shape,
#    both dtypes (built in the background during 1).
# 4. SOAK=1: scripts/suites/gemm-4096.json under KERNELGATE_SOAK_MS=300 (the default) and
#    1000, SOAK_ROUNDS interleaved processes each (the per-process spread at 4096^3).
# Under $OUT: log.txt, gate.tgz, ts-rank.md, ts-runs.tar.gz, bench-checks.txt, gemm-table.md,
# and with SOAK=1 soak-rank.md, soak-runs.tar.gz.
set -u
. scripts/device-lib.sh
bench_build "$DEV_TMP/gwb" "$DEV_TMP/bench-build.log" kernels &
for s in ${SUITES-default gemm gemm_edges}; do cli "gate-$s" "$s" --kernels gemm --no-progress; done
mode_env() { echo "KERNELGATE_GEMM_EPILOGUE=$1"; }
if [ "${AB:-1}" = 1 ]; then
  ROUNDS=${ROUNDS:-2} interleave ts scripts/suites/ts33.json tma regs
  archive_runs ts
fi
wait
log "bench build: $(tail -1 "$DEV_TMP/bench-build.log"); spill lines: $(grep -E '[1-9][0-9]* bytes spill stores' "$DEV_TMP/bench-build.log" | wc -l)"
[ -x "$DEV_TMP/gwb" ] && bench_checks bench "$DEV_TMP/gwb" "$OUT/bench-checks.txt"
python3 scripts/gemm-table.py "$OUT"/gate-gemm.json > "$OUT/gemm-table.md" 2>&1
tail -3 "$OUT/gemm-table.md" | tee -a "$DEV_LOG"
if [ "${SOAK:-0}" = 1 ]; then
  mode_env() { echo "KERNELGATE_SOAK_MS=$1"; }
  ROUNDS=${SOAK_ROUNDS:-3} interleave soak scripts/suites/gemm-4096.json 300 1000
  archive_runs soak
fi
( cd "$OUT" && ls gate-*.json > /dev/null 2>&1 && tar czf gate.tgz gate-*.json && rm -f gate-*.json )
log "done"
