#!/usr/bin/env bash
# Session 27, one fresh machine (repo root, .devbin/ carried): (1) a same-run paired A/B of the
# wgmma nsa kernel against BASE (a directory holding kernels/, default .devbin/base: an earlier
# revision's kernels exported with `git archive REV kernels | tar -x -C .devbin/base`), forced
# on the nsa suite (cases it cannot run report why); (2) SUITES (default "nsa") gated through
# the test binary with the automatic choice. Under $OUT: log.txt, ab.json, ab-tail.txt, gate.tgz.
set -u
export OUT=${OUT:-/tmp/kgout}
DEV_TMP=/tmp/s27ab
. scripts/device-lib.sh
BASE=${BASE:-.devbin/base}
log "base: $BASE ($(ls "$BASE/kernels" | wc -l) kernel files)"
t0=$(date +%s)
KERNELGATE_NSA_KERNEL=wgmma $KG run --suite nsa --backends cuda --base "$BASE" --output "$OUT/ab.json" > "$DEV_TMP/ab.log" 2>&1
log "ab rc=$? wall $(( $(date +%s) - t0 )) s: $(grep -E '^A/B' "$DEV_TMP/ab.log")"
grep -v "cannot run this case" "$DEV_TMP/ab.log" | tail -70 > "$OUT/ab-tail.txt"
for s in ${SUITES:-nsa}; do suite "$s" KERNELGATE_SUITE="$s" .devbin/kernels; done
cp "$DEV_TMP"/*.log "$OUT"/ 2>/dev/null; rm -f "$OUT/ab.log"
( cd "$OUT" && tar czf gate.tgz results-*.json *.log && rm -f results-*.json *.log )
ls -la "$OUT"
