#!/usr/bin/env bash
# Session 17: duty-held baseline rounds for the attention suites (repo root, .devbin/ carried):
# UPDATE_BASELINES=append of attention_bars and attention_scaling (our kernel and torch SDPA in
# the same run) into a copy of baselines/, returned as baselines.tar (this model's slug); their
# results double as issue 11's tables. On an H200 the quack suite runs first (its largest cases
# need more than 78 GiB: the reason the run asks for an H200).
# Under $OUT: log.txt, results-bars.json, results-scaling.json, baselines.tar (quack.json).
set -u
DEV_TMP=/tmp/at
. scripts/device-lib.sh
rm -rf /tmp/kgb && cp -r baselines /tmp/kgb
slug=$(gpu_slug)
is_h200 && cli quack quack --backends cuda
for s in bars:attention_bars scaling:attention_scaling; do
  suite "${s%%:*}" KERNELGATE_SUITE="${s#*:}" KERNELGATE_BASELINE_DIR=/tmp/kgb UPDATE_BASELINES=append .devbin/kernels
done
tar -C /tmp/kgb -cf "$OUT/baselines.tar" "$slug"
