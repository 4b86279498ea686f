#!/usr/bin/env bash
# Session 34, one fresh machine (repo root, .devbin/ carried): the gate of the overlapped-epilogue
# gemm_wgmma kernel, session 33's gate script unchanged (AB=0 scripts/session33-gate.sh: the
# gemm cases of default, gemm and gemm_edges against the committed baselines, the dev bench's
# checks of every tile and shape, the gemm table against cuBLAS). On an H200 the `masked` suite
# after it (257 of its 264 H200 cases have no entry).
# Under $OUT: log.txt, gate.tgz, gemm-table.md, bench-checks.txt (H200: suites.tgz).
set -u
. scripts/device-lib.sh
AB=0 bash scripts/session33-gate.sh
if is_h200; then
  cli suite-masked masked --no-progress
  ( cd "$OUT" && tar czf suites.tgz suite-*.json && rm -f suite-*.json )
fi
log "session 34 gate done"
