#!/usr/bin/env bash
# Session 29, one fresh machine (repo root, .devbin/ carried): QUACK=1 the quack suite first (its
# largest cases need more than 78 GiB: why an H200 is asked for), then the dsv3 suite's
# cross-entropy cases (forward and backward) gated through the test binary: a second machine of
# the model for the 4096 x 3072 entry that restarted with the L2-read warp-row kernel.
# Under $OUT: log.txt, quack.json, gate.tgz.
set -u
export OUT=${OUT:-/tmp/kgout}
DEV_TMP=/tmp/s29r
. scripts/device-lib.sh
[ "${QUACK:-0}" = 1 ] && cli quack quack --backends cuda
suite dsv3-ce KERNELGATE_SUITE=dsv3 .devbin/kernels cross_entropy
cp "$DEV_TMP"/dsv3-ce.log "$OUT"/
( cd "$OUT" && tar czf gate.tgz results-*.json dsv3-ce.log && rm -f results-*.json dsv3-ce.log )
