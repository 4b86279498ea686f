#!/usr/bin/env bash
# Session 20 (repo root, .devbin/ carried): the pair-bucketed NSA kernel (kernels/nsa_pairs.cu)
# against the tiled one on scripts/suites/nsa-small-g.json (G <= 4, no window; every case checked
# against the float64 reference), interleaved ROUNDS times and ranked; LONG=1 the same on
# scripts/suites/nsa-long.json (T 4096-16384); then FP32=1 the fp32 GEMM
# cases gated (scripts/session20-fp32.sh without the quack suite).
# Under $OUT: log.txt, nsa-rank.md, nsa-runs.tar.gz (+ nsalong-*, the fp32 files).
set -u
DEV_TMP=/tmp/s20n
. scripts/device-lib.sh
[ "${QUACK:-0}" = 1 ] && cli quack quack --backends cuda
mode_env() { echo "KERNELGATE_NSA_KERNEL=$1"; }
ROUNDS=${ROUNDS:-2} interleave nsa scripts/suites/nsa-small-g.json tiled pairs
[ "${LONG:-0}" = 1 ] && ROUNDS=2 interleave nsalong scripts/suites/nsa-long.json tiled pairs
grep -hE "WRONG|error|panick" "$DEV_TMP"/nsa-*.log | head -20 | cut -c1-300 | tee -a "$DEV_LOG"
archive_runs nsa
[ "${LONG:-0}" = 1 ] && archive_runs nsalong
[ "${FP32:-0}" = 1 ] && QUACK=0 bash scripts/session20-fp32.sh
ls "$OUT" | tee -a "$DEV_LOG"
