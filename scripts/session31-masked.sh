#!/usr/bin/env bash
# Session 31, one machine (repo root, .devbin/ carried): the masked suite (softmax and
# cross-entropy forward/backward with -inf columns) through the CLI, every forward and rows
# kernel forced in turn, first on the committed kernels ("unfixed"), then with the files of
# .devbin/fixed/ copied over kernels/ ("fixed"), then the cross-entropy probe's --edge rows on the
# fixed kernels. Quick timing: the point is the checks. Under $OUT: log.txt, summary.md,
# masked-results.tgz, probe.txt.
set -u
. scripts/device-lib.sh
export KERNELGATE_BASELINE_DIR=$DEV_TMP/bl
Q="--max-time 20ms --min-samples 3 --warmup-ms 2 --no-progress"
CE_MODES=${CE_MODES:-"l2online:p0 l2online:p1 l2online l2rows rows regs bulk off"}
ROWS_MODES=${ROWS_MODES:-"old all"}
pass() {
  local tag=$1
  # shellcheck disable=SC2086
  cli "$tag-auto" masked $Q
  for m in $CE_MODES; do
    # shellcheck disable=SC2086
    KERNELGATE_CE_FWD=$m cli "$tag-ce-${m//:/_}" masked --kernels cross_entropy --backends cuda $Q
  done
  for m in $ROWS_MODES; do
    # shellcheck disable=SC2086
    KERNELGATE_ROWS_KERNEL=$m cli "$tag-rows-$m" masked --backends cuda $Q
  done
}
[ "${UNFIXED:-1}" = 1 ] && pass unfixed
if [ -d .devbin/fixed ]; then
  cp .devbin/fixed/*.cu kernels/
  log "fixed: $(ls .devbin/fixed | tr '\n' ' ')"
  pass fixed
fi
[ "${PROBE:-1}" = 1 ] && { bash kernels/dev/run_ce_probe.sh --quick --edge > "$OUT/probe.txt" 2>&1; log "probe rc=$?"; }
python3 scripts/masked-summary.py "$OUT"/*.json > "$OUT/summary.md" 2>&1
tar -C "$OUT" -czf "$DEV_TMP/masked-results.tgz" $(cd "$OUT" && ls *.json) && rm -f "$OUT"/*.json && mv "$DEV_TMP/masked-results.tgz" "$OUT/"
log "done"
