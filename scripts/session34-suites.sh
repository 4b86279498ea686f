#!/usr/bin/env bash
# Session 34, one fresh machine (repo root, .devbin/ carried): gate runs for the stored entries
# that timed older code or do not exist (`kernelgate coverage`, session 34's "older code" count).
# - H200: session 33's gate of the gemm_wgmma kernel (AB=0 scripts/session33-gate.sh: the second
#   H200 machine its entries are owed), then the `masked` suite (257 of 264 cases without entry).
# - H100: H100_SUITES (the first three calls ran `quack`, whose 44 entries timed code from before
#   session 31's row-kernel fix, and `masked`; now empty: stop at once).
# Under $OUT: log.txt, suites.tgz (suite-*.json), and on an H200 gate.tgz, gemm-table.md,
# bench-checks.txt.
set -u
. scripts/device-lib.sh
if is_h200; then
  AB=0 bash scripts/session33-gate.sh
  SUITES=${SUITES:-masked}
else
  SUITES=${H100_SUITES-}  # three H100 machines ran quack + masked (bd689f88, 770a34eb, 4c57b352)
  log "not an H200: suites '$SUITES'"
fi
for s in $SUITES; do cli "suite-$s" "$s" --no-progress; done
( cd "$OUT" && ls suite-*.json > /dev/null 2>&1 && tar czf suites.tgz suite-*.json && rm -f suite-*.json )
log "suites done"
