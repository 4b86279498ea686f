#!/usr/bin/env bash
# Session 39, a fresh machine (repo root, .devbin/ carried): binaries with the session's code-hash
# form against the mapped baselines (kernelgate rehash --code-hashes). SUITES (default
# "gemm_edges default") through the test binary; every cuda case should keep its entry's code
# (import restarts nothing for other code) and pass the gate.
# Under $OUT: log.txt, results-*.json.
set -u
. scripts/device-lib.sh
for n in ${SUITES:-gemm_edges default}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
ls -la "$OUT"
