#!/usr/bin/env bash
# Session 29, one fresh machine (repo root, .devbin/ carried): the warp-row cross-entropy read
# through the L2 (kernels/cross_entropy_l2rows.cu, `_c12`, the new auto pick at 4096 x 3072)
# through the harness. QUACK=1 first runs the quack suite (its largest cases need more than
# 78 GiB: why an H200 is asked for). Then SUITES (default "dsv3") gated through the test binary
# (the 4096 x 3072 entry restarts: its kernel and source hash changed), then ROUNDS (default 2)
# interleaved `kernelgate run`s of scripts/suites/ce-gap.json with the automatic choice and with
# KERNELGATE_CE_FWD=off (4096 x 3072 then runs the bulk-staged `_r` that was its pick before),
# ranked case by case.
# Under $OUT: log.txt, quack.json, gate.tgz, ce-*.json, ce-rank.md.
set -u
export OUT=${OUT:-/tmp/kgout}
DEV_TMP=/tmp/s29c
. scripts/device-lib.sh
[ "${QUACK:-0}" = 1 ] && cli quack quack --backends cuda
SUITES="${SUITES:-dsv3}" bash scripts/session25-run.sh
mode_env() { [ "$1" = auto ] && echo "" || echo "KERNELGATE_CE_FWD=$1"; }
interleave ce scripts/suites/ce-gap.json auto off
python3 - "$OUT" <<'PY' | tee -a "$DEV_LOG"
import glob, json, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ce-*.json"))):
    for r in json.load(open(f))["results"]:
        print(f"{os.path.basename(f)}: {r['case']} {r['latency_ms']*1e3:.2f} us ({r['roofline_frac']:.3f}) batch {r['batch']} {r['variant'][:28]}")
PY
