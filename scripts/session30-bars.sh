#!/usr/bin/env bash
# Session 30, one fresh machine (repo root, .devbin/ carried): the bars of issues 13 and 11
# measured again through the CLI. QUACK=1 first runs the quack suite (its largest cases need
# more than 78 GiB: why an H200 is asked for); then scripts/suites/mem-bars.json (65536 x 4096
# bf16, every memory-bound family the bar names, beside the copy ceiling of the same run) and,
# with ATTN=1 (default), the attention_bars suite (our kernels beside torch SDPA, same run).
# Under $OUT: log.txt, quack.json, mem-bars.json, attention_bars.json.
set -u
export OUT=${OUT:-/tmp/kgout}
DEV_TMP=/tmp/s30b
. scripts/device-lib.sh
[ "${QUACK:-0}" = 1 ] && cli quack quack --backends cuda
cli mem-bars scripts/suites/mem-bars.json
python3 - "$OUT/mem-bars.json" <<'PY' | tee -a "$DEV_LOG"
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"{r['case']:45s} {r['latency_ms']*1e3:9.2f} us {r['gbps']:7.0f} GB/s ({r['roofline_frac']:.3f}) {r['verdict']}")
PY
[ "${ATTN:-1}" = 1 ] && cli attention_bars attention_bars
exit 0
