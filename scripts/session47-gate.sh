#!/usr/bin/env bash
# Session 47, a fresh machine (repo root, .devbin/ carried): the pick's B-multicast clusters
# (m_pairs_in_pick) through the harness against the plans before it
# (scripts/session47-c2-harness.sh), then unless GATE=0 the gate on the gemm and gemm_edges
# suites (no fixture plan changes: a regression there would be the gate's or the machine's).
# Under $OUT: log.txt, c2h-rank.md, c2h-runs.tar.gz, results-*.json.gz.
set -u
. scripts/device-lib.sh
bash scripts/session47-c2-harness.sh
if [ "${GATE:-1}" = 1 ]; then
  suite gemm KERNELGATE_SUITE=gemm .devbin/kernels
  suite gemm_edges KERNELGATE_SUITE=gemm_edges .devbin/kernels
  ( cd "$OUT" && gzip -9 -n results-*.json )
fi
log done
out_fit
