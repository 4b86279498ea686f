#!/usr/bin/env bash
# Session 18 (repo root, .devbin/ carried): the wgmma GEMM sequence launched with
# KERNELGATE_GEMM_PDL unset (then: only kernels after the first as programmatic dependents; now
# spelled `inner`) and =all (the first one too, so back-to-back launches of a case overlap; the
# default since this run), on
# scripts/suites/gemm-small.json with cuBLAS in every run, interleaved ROUNDS times, ranked.
# Under $OUT: log.txt, pdl-rank.md, pdl-runs.tar.gz.
set -u
DEV_TMP=/tmp/s18p
. scripts/device-lib.sh
mode_env() { echo "KERNELGATE_GEMM_PDL=$1"; }
interleave pdl scripts/suites/gemm-small.json inner all
archive_runs pdl
