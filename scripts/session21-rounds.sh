#!/usr/bin/env bash
# Session 21: second-machine rounds through the gated test binary (repo root, .devbin/ carried).
# Every suite in SUITES runs as `KERNELGATE_SUITE=<suite> .devbin/kernels` against the committed
# baselines: its verdicts on this fresh machine are gate evidence (false regressions counted),
# and its results file becomes the entries' round from a second machine once imported.
# QUACK=1 runs the quack suite first (its largest cases need more than 78 GiB: the reason an
# H200 is asked for). Under $OUT: log.txt and rounds.tgz (results-<suite>.json, the logs).
set -u
DEV_TMP=/tmp/s21r
. scripts/device-lib.sh
SUITES=${SUITES:-"nsa attention_bars attention_scaling dsv3 norms"}
[ "${QUACK:-0}" = 1 ] && SUITES="quack $SUITES"
for s in $SUITES; do
  suite "$(basename "$s" .json)" KERNELGATE_SUITE="$s" .devbin/kernels
done
cp "$DEV_TMP"/*.log "$OUT"/ 2>/dev/null
( cd "$OUT" && tar czf rounds.tgz results-*.json *.log && rm -f results-*.json *.log )
ls -la "$OUT"
