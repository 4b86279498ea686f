#!/usr/bin/env bash
# Session 31, one fresh machine (repo root, .devbin/ carried): the -inf fix moved the source
# hash of softmax.cu, rows_p.cu and the cross-entropy forward modules. This gates the families
# they serve (FAMS) in SUITES through the CLI against the committed baselines (evidence that the
# fix costs nothing; the results are imported as the restarted entries' rounds), after, with
# MASKED=1, the masked suite under the auto kernels (quick timing, no baselines: checks only),
# and with MASKED=2 also every cross-entropy forward and rows kernel forced in turn.
# Under $OUT: log.txt, summary.md, masked-results.tgz, gate.tgz.
set -u
. scripts/device-lib.sh
FAMS=${FAMS:-softmax,softmax_bwd,cross_entropy,cross_entropy_bwd,layernorm,rmsnorm_bwd}
Q="--max-time 20ms --min-samples 3 --warmup-ms 2 --no-progress"
if [ "${MASKED:-0}" != 0 ]; then
  # shellcheck disable=SC2086
  KERNELGATE_BASELINE_DIR=$DEV_TMP/bl cli masked-auto masked $Q
  if [ "$MASKED" = 2 ]; then
    for m in l2online:p0 l2online:p1 l2online l2rows rows regs bulk off; do
      # shellcheck disable=SC2086
      KERNELGATE_BASELINE_DIR=$DEV_TMP/bl KERNELGATE_CE_FWD=$m cli "masked-ce-${m//:/_}" masked --kernels cross_entropy --backends cuda $Q
    done
    for m in old all; do
      # shellcheck disable=SC2086
      KERNELGATE_BASELINE_DIR=$DEV_TMP/bl KERNELGATE_ROWS_KERNEL=$m cli "masked-rows-$m" masked --backends cuda $Q
    done
  fi
fi
for s in ${SUITES:-default dsv3}; do cli "gate-$s" "$s" --kernels "$FAMS" --no-progress; done
python3 scripts/masked-summary.py "$OUT"/*.json > "$OUT/summary.md" 2>&1
cd "$OUT" || exit 1
ls masked-*.json > /dev/null 2>&1 && tar czf masked-results.tgz masked-*.json && rm -f masked-*.json
ls gate-*.json > /dev/null 2>&1 && tar czf gate.tgz gate-*.json && rm -f gate-*.json
log "done"
