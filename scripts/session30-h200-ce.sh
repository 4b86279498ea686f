#!/usr/bin/env bash
# Session 30, one fresh machine (repo root, .devbin/ carried): the cross-entropy forward that
# sums each vector as it lands (kernels/cross_entropy_l2online.cu, `_o12`/`_o12p1`/`_o12p2`)
# against session 29's `_c12` (kernels/cross_entropy_l2rows.cu) at 4096 x 3072.
# QUACK=1 first runs the quack suite (its largest cases need more than 78 GiB: why an H200 is
# asked for). Then the probe (kernels/dev/run_ce_probe.sh --quick: cold, warm, batch and graph
# timings of the probe's layouts and of the product modules built apart), then ROUNDS (default 2)
# interleaved `kernelgate run`s of CE_SUITE (default scripts/suites/ce-gap.json) under KERNELGATE_CE_FWD = each of
# MODES (default: auto, l2online:p1, l2online:p2, l2rows), ranked case by case. GATE=1 last
# gates SUITES (default dsv3) through the test binary.
# Under $OUT: log.txt, quack.json, probe.txt, ce-runs.tar.gz, ce-rank.md, gate.tgz.
set -u
export OUT=${OUT:-/tmp/kgout}
DEV_TMP=/tmp/s30
. scripts/device-lib.sh
[ "${QUACK:-0}" = 1 ] && cli quack quack --backends cuda
if [ "${PROBE:-1}" = 1 ]; then
  t0=$(date +%s)
  OUT_DIR=$DEV_TMP/probe bash kernels/dev/run_ce_probe.sh --quick > "$OUT/probe.txt" 2>&1
  log "probe rc=$? wall $(( $(date +%s) - t0 )) s: $(tail -1 "$OUT/probe.txt")"
  grep -E "product|cep|readp" "$OUT/probe.txt" | cut -c1-200 | tee -a "$DEV_LOG"
fi
mode_env() { [ "$1" = auto ] && echo "" || echo "KERNELGATE_CE_FWD=$1"; }
# shellcheck disable=SC2086 # the modes are words
interleave ce "${CE_SUITE:-scripts/suites/ce-gap.json}" ${MODES:-auto l2online:p1 l2online:p2 l2rows}
python3 - "$OUT" <<'PY' | tee -a "$DEV_LOG"
import glob, json, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ce-*.json"))):
    for r in json.load(open(f))["results"]:
        print(f"{os.path.basename(f)}: {r['case']} {r['latency_ms']*1e3:.2f} us ({r['roofline_frac']:.3f}) batch {r['batch']} {r['variant'][:40]}")
PY
archive_runs ce
[ "${GATE:-0}" = 1 ] && SUITES="${SUITES:-dsv3}" bash scripts/session25-run.sh
exit 0
