#!/usr/bin/env bash
# Prepared in session 21 (not yet run): the first GPU runs of kernels/nsa_local.cu (NSA at G = 1,
# one CTA per R tokens, partial records in shared memory, one launch). Repo root, .devbin/ carried.
#   1. correctness: scripts/suites/nsa-g1.json (44 cases: 22 shapes x bf16, fp16; float64 reference) with the local
#      kernel forced, its default launch; any WRONG / error line is logged;
#   2. speed: local, pairs and tiled interleaved ROUNDS times on nsa-g1 and ranked (nsag1-rank.md);
#   3. launches: local launches R:NW[:ST] ranked on nsa-g1-d64 (nsalaunch-rank.md); 128:8:2
#      copies each warp's next tile while it computes the current one; 64:8 (about 100 KiB) is
#      the one launch that fits two CTAs on an SM, so one CTA's bucketing and merge overlap the
#      other's tiles.
# Under $OUT: log.txt, nsag1-rank.md, nsag1-runs.tar.gz (+ nsalaunch-*).
set -u
DEV_TMP=/tmp/nsal
. scripts/device-lib.sh
# PARTS picks the parts (default all three; about 40 s, 4 min and 2 min of device time on an H100,
# so one call holds them all, or split them over calls to the same warm machine).
PARTS=${PARTS:-"check rank launches"}
has() { case " $PARTS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if has check; then
  ( export KERNELGATE_NSA_KERNEL=local; cli check scripts/suites/nsa-g1.json )
  grep -hE "WRONG|ERROR|error|trap|illegal" "$DEV_TMP/check.log" | head -20 | cut -c1-300 | tee -a "$DEV_LOG"
  cp "$DEV_TMP/check.log" "$OUT/check.log"
  # Timing a kernel that is wrong wastes the call: stop here unless FORCE=1.
  if grep -qE "WRONG|ERROR|error|trap|illegal" "$DEV_TMP/check.log" && [ "${FORCE:-0}" != 1 ]; then
    log "check failed: rank and launches skipped"; PARTS=check
  fi
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
  ROUNDS=2 interleave nsalaunch scripts/suites/nsa-g1-d64.json local-256:8 local-128:16 local-128:8:2 local-128:8 local-64:8
  archive_runs nsalaunch
fi
ls "$OUT" | tee -a "$DEV_LOG"
