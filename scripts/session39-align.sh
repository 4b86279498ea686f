#!/usr/bin/env bash
# Session 39, one machine (repo root, .devbin/ carried): the B alignment copy against none
# (KERNELGATE_GEMM_ALIGN=off) on scripts/suites/align39.json, ROUNDS interleaved rounds, ranked.
# Under $OUT: log.txt, align-rank.md, align-runs.tar.gz.
set -u
. scripts/device-lib.sh
mode_env() { case $1 in aligned) echo "KERNELGATE_GEMM_ALIGN=2048";; off) echo "KERNELGATE_GEMM_ALIGN=off";; esac; }
ROUNDS=${ROUNDS:-2} interleave align scripts/suites/align39.json aligned off
archive_runs align
ls -la "$OUT"
