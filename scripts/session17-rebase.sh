#!/usr/bin/env bash
# Session 17: baselines and evidence for the register-row cross-entropy forward (repo root,
# .devbin/ carried). On an H200 the quack suite runs first (its largest cases need more than
# 78 GiB: the reason these runs ask for an H200).
#   first: UPDATE_BASELINES=append rounds of the cross-entropy forward cases of the default,
#          norms, dsv3 (and on an H200 quack) suites into a copy of baselines/ (cases whose
#          kernel changed start over: their old rounds timed other code), returned as
#          baselines.tar (this model's slug); then the dsv3 suite whole (`kernelgate run`).
#   gate:  on a fresh machine after the first machine's rounds were merged: the default and
#          dsv3 suites gated against the baselines in the tree (results imported as rounds).
# Under $OUT: log.txt, quack.json (H200), dsv3.json (first), results-*.json, baselines.tar.
set -u
DEV_TMP=/tmp/rb
. scripts/device-lib.sh
rm -rf /tmp/kgb && cp -r baselines /tmp/kgb
slug=$(gpu_slug)
is_h200 && cli quack quack --backends cuda
if [ "${1:-first}" = first ]; then
  for s in default norms dsv3; do
    suite "append-$s" KERNELGATE_SUITE=$s KERNELGATE_BASELINE_DIR=/tmp/kgb UPDATE_BASELINES=append .devbin/kernels cross_entropy::cuda::
  done
  is_h200 && suite append-quack KERNELGATE_SUITE=quack KERNELGATE_BASELINE_DIR=/tmp/kgb UPDATE_BASELINES=append .devbin/kernels cross_entropy::cuda::
  tar -C /tmp/kgb -cf "$OUT/baselines.tar" "$slug"
  cli dsv3 dsv3 --backends cuda
else
  suite gate KERNELGATE_SUITE=default .devbin/kernels
  suite dsv3gate KERNELGATE_SUITE=dsv3 .devbin/kernels
fi
