#!/usr/bin/env bash
# Session 40, a fresh machine (repo root, .devbin/ carried): SUITES (default "gemm smoke mha nsa")
# through the test binary against the committed baselines: the second machines for the fp32
# split-K cases, and the device check of session 39's hopper_sync.cuh merge (mha, nsa: their
# entries' code hashes must match the stored ones). Under $OUT: log.txt, results-*.json.
set -u
. scripts/device-lib.sh
for n in ${SUITES-gemm smoke mha nsa}; do suite "$n" KERNELGATE_SUITE="$n" .devbin/kernels; done
ls -la "$OUT"
