#!/usr/bin/env bash
# Session 33: the README's main command (the test binary on the default suite, the committed
# baselines) on a fresh machine, after the import of the fix's gate rounds.
# Under $OUT: log.txt, results-main.json, main.log.
set -u
. scripts/device-lib.sh
suite main .devbin/kernels
cp "$DEV_TMP/main.log" "$OUT/main.log"
log done
