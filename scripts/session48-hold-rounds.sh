#!/usr/bin/env bash
# Session 48, a fresh machine (repo root, .devbin/ carried): one gated run of
# scripts/suites/hold48.json (the cases whose samples are 100-250 us, now duty-held), whose
# results are imported as the second machine's rounds of the entries that restarted on the first.
# Under $OUT: log.txt, results-hold48.json.gz.
set -u
. scripts/device-lib.sh
cli results-hold48 scripts/suites/hold48.json --no-progress
gzip -9 -n "$OUT/results-hold48.json"
log done
out_fit
