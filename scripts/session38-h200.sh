#!/usr/bin/env bash
# Session 38, a second fresh H200 (repo root, .devbin/ carried): the gemm gate again
# (scripts/session35-gate.sh, AB=0: default/gemm/gemm_edges gemm cases through the CLI against the
# baselines, the dev bench's checks, gemm-table.md), then mha, attention_bars and nsa through the
# test binary against the committed baselines (issue 11's tables on an H200). Stops at once on
# anything else (keeps the device time).
# Under $OUT: log.txt, gate.tgz, gemm-table.md, bench-checks.txt, suites.tgz.
set -u
if ! nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H200; then
  nvidia-smi --query-gpu=name,uuid --format=csv,noheader; echo "not an H200: stopping"; exit 0
fi
AB=0 bash scripts/session35-gate.sh
( . scripts/device-lib.sh
  for n in mha attention_bars nsa; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
  cd "$OUT" && tar czf suites.tgz results-*.json && rm -f results-*.json )
ls -la "$OUT"
