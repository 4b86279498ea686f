#!/usr/bin/env bash
# Session 32, one fresh machine (repo root, .devbin/ carried, nvcc + cuBLAS): the TMA-store
# epilogue in the product (kernels/gemm_wgmma.cu's _ts entries, the host's default; its source
# hash moved, so every gemm_wgmma entry restarts on import).
# 1. GATE: the gemm cases of SUITES (default "default gemm gemm_edges") through the CLI against
#    the committed baselines (the register epilogue's rounds): correctness of every gemm case
#    through the new entries, and what the change does to each stored latency.
# 2. A/B through the harness: scripts/suites/squares.json (ours and cuBLAS) under
#    KERNELGATE_GEMM_EPILOGUE=tma and =regs, ROUNDS interleaved rounds, ranked.
# 3. The dev bench's checks of every tile (the _ts rows and the _regs ones), every bench shape,
#    both dtypes (built in the background during 1).
# Under $OUT: log.txt, gate.tgz, sq.tgz, sq-rank.md, bench-checks.txt.
set -u
. scripts/device-lib.sh
bench_build "$DEV_TMP/gwb" "$DEV_TMP/bench-build.log" kernels &
for s in ${SUITES-default gemm gemm_edges}; do cli "gate-$s" "$s" --kernels gemm --no-progress; done
mode_env() { echo "KERNELGATE_GEMM_EPILOGUE=$1"; }
if [ "${AB:-1}" = 1 ]; then ROUNDS=${ROUNDS:-2} interleave sq scripts/suites/squares.json tma regs; fi
wait
log "bench build: $(tail -1 "$DEV_TMP/bench-build.log"); spill lines: $(grep -E '[1-9][0-9]* bytes spill stores' "$DEV_TMP/bench-build.log" | wc -l)"
[ -x "$DEV_TMP/gwb" ] && bench_checks bench "$DEV_TMP/gwb" "$OUT/bench-checks.txt"
python3 scripts/gemm-table.py "$OUT"/gate-gemm.json > "$OUT/gemm-table.md" 2>&1
tail -3 "$OUT/gemm-table.md" | tee -a "$DEV_LOG"
cd "$OUT" || exit 1
ls gate-*.json > /dev/null 2>&1 && tar czf gate.tgz gate-*.json && rm -f gate-*.json
ls sq-*.json > /dev/null 2>&1 && tar czf sq.tgz sq-*.json && rm -f sq-*.json
log "done"
