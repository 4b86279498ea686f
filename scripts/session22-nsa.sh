#!/usr/bin/env bash
# Session 22 (repo root, .devbin/ carried, .devbin/base/kernels = the kernels to compare with,
# e.g. `git archive HEAD kernels`): the NSA local kernel of the working tree on a GPU:
#   1. correctness on scripts/suites/nsa-g1.json (44 cases) with the local kernel forced; the
#      rest is skipped unless all 44 are verified (FORCE=1 runs it anyway);
#   2. same-run A/B against .devbin/base's local kernel (both forced);
#   3. the kernels ranked (local, pairs, tiled) on nsa-g1, ROUNDS interleaved rounds;
#   4. local launches ranked on nsa-g1-d64 (LROUNDS rounds);
#   5. Nsight Compute of the default launch at b2 t2048 s4 bs32 (scripts/session22-ncu-nsa.sh).
# PARTS picks among check, ab, rank, launches, ncu (default all). Under $OUT: log.txt,
# nsag1-rank.md, nsalaunch-rank.md, log-ncu.txt, ncu-nsa.tar.gz and bundle.tgz (the check and
# A/B results and logs, the rank runs).
set -u
DEV_TMP=/tmp/nsal
. scripts/device-lib.sh
PARTS=${PARTS:-"check ab rank launches ncu"}
has() { case " $PARTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if has check; then
  ( export KERNELGATE_NSA_KERNEL=local; cli check scripts/suites/nsa-g1.json )
  cp "$DEV_TMP/check.log" "$OUT/check.log"
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["results"]; print("verified", sum(1 for x in r if x["verified"]), "of", len(r))' "$OUT/check.json" | tee -a "$DEV_LOG"
  if ! grep -q "verified 44 of 44" "$DEV_LOG" && [ "${FORCE:-0}" != 1 ]; then log "check failed: the rest skipped"; PARTS=check; fi
fi
if has ab; then
  ( export KERNELGATE_NSA_KERNEL=local; cli ab scripts/suites/nsa-g1.json --backends cuda --base .devbin/base )
  grep -E "A/B" "$DEV_TMP/ab.log" | tail -3 | tee -a "$DEV_LOG"
  cp "$DEV_TMP/ab.log" "$OUT/ab.log"
fi
mode_env() {
  case $1 in
    local-*) echo "KERNELGATE_NSA_KERNEL=local KERNELGATE_NSA_LOCAL=${1#local-}" ;;
    *) echo "KERNELGATE_NSA_KERNEL=$1" ;;
  esac
}
if has rank; then
  ROUNDS=${ROUNDS:-2} interleave nsag1 scripts/suites/nsa-g1.json local pairs tiled
  archive_runs nsag1
fi
if has launches; then
  ROUNDS=${LROUNDS:-1} interleave nsalaunch scripts/suites/nsa-g1-d64.json local-128:16 local-128:8:2 local-128:8 local-64:16 local-64:8
  archive_runs nsalaunch
fi
if has ncu; then
  LAUNCHES=${NCU_LAUNCHES:-128:16} bash scripts/session22-ncu-nsa.sh > /dev/null 2>&1
  log "ncu done"
fi
# The device returns only a few files: the JSON, logs and run archives go in one bundle.
( cd "$OUT" && tar czf bundle.tgz $(ls check.json check.log ab.json ab.log nsag1-runs.tar.gz nsalaunch-runs.tar.gz 2>/dev/null) \
  && rm -f check.json check.log ab.json ab.log nsag1-runs.tar.gz nsalaunch-runs.tar.gz )
ls "$OUT" | tee -a "$DEV_LOG"
