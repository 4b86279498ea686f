#!/usr/bin/env bash
# Session 24, first fresh machine (.devbin/ and .whl/c carried): (1) the throttled verdict end
# to end with the binary that carries session 23's review fixes (scripts/session23-throttle.sh);
# (2) the nsa suite gated against the stored baselines (fresh-machine gate evidence); (3) the
# G = 16 leads against fla (scripts/session24-nsa-g16.sh: the nsa suite with the tiled kernel
# forced, checked against the float64 reference, then ours grouped/tiled and fla interleaved).
# Under $OUT: log.txt, throttle.tgz, results-nsa.json, g16.tgz.
set -u
export OUT=${OUT:-/tmp/kgout}
bash scripts/session23-throttle.sh
DEV_TMP=/tmp/s24gate
. scripts/device-lib.sh
suite nsa KERNELGATE_SUITE=nsa .devbin/kernels
ROUNDS=${ROUNDS:-2} bash scripts/session24-nsa-g16.sh
ls -la "$OUT"
