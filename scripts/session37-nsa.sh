#!/usr/bin/env bash
# Session 37, one fresh machine (repo root, .devbin/ carried with .devbin/base/kernels: the
# kernels of the commit before the NSA change under test). Run twice: for the diagonal-first
# NSA lists (reverted), then for the skipped block-bias add on fully selected key tiles.
# 1. Paired same-run A/B against the base, wgmma forced (KERNELGATE_NSA_KERNEL=wgmma), on the
#    nsa suite (ab-nsa.json) and on scripts/suites/nsa-g1.json (ab-g1.json; 22 G = 1 shapes x 2
#    dtypes incl. T = 1, 17, 300, 777, 2049). Cases it cannot run report why.
# 2. nsa_irregular (rows that break the generator's rules: the own block not selected among
#    them) with wgmma forced, then through the test binary with the automatic choice.
# 3. The nsa suite through the test binary (automatic choice) against the committed baselines.
# Under $OUT: log.txt, ab-nsa.json, ab-g1.json, irr-forced.json, gate.tgz.
set -u
. scripts/device-lib.sh
BASE=.devbin/base
log "base: $BASE ($(ls "$BASE/kernels" | wc -l) kernel files)"
KERNELGATE_NSA_KERNEL=wgmma cli ab-nsa nsa --backends cuda --base "$BASE" --no-progress
KERNELGATE_NSA_KERNEL=wgmma cli ab-g1 "$PWD/scripts/suites/nsa-g1.json" --backends cuda --base "$BASE" --no-progress
KERNELGATE_NSA_KERNEL=wgmma cli irr-forced nsa_irregular --backends cuda --no-progress
suite nsa_irregular KERNELGATE_SUITE=nsa_irregular .devbin/kernels
suite nsa KERNELGATE_SUITE=nsa .devbin/kernels
grep -hE "^A/B|paired" "$DEV_TMP"/ab-*.log | head -6 | tee -a "$DEV_LOG"
( cd "$OUT" && tar czf gate.tgz results-*.json && rm -f results-*.json )
( cd "$DEV_TMP" && tar czf "$OUT/logs.tgz" *.log )
ls -la "$OUT"
