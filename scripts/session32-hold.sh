#!/usr/bin/env bash
# Session 32: does the hold in front of each sample bias the same-run ratio against cuBLAS? With
# the default policy the hold follows each backend's host enqueue time (3x), so cuBLAS's
# 2048^3 samples sat behind 47-157 us holds and ours behind 27-42 us (H100 1e06e13b); the
# duty-cycle rule evens them out only from 250 us samples on. scripts/suites/squares.json
# (ours and cuBLAS) under KERNELGATE_HOLD_US = 20 (default), 150 and 500, ROUNDS interleaved
# rounds, ranked. Under $OUT: log.txt, hold-rank.md, hold-table.md, hold-runs.tar.gz.
set -u
. scripts/device-lib.sh
mode_env() { echo "KERNELGATE_HOLD_US=${1#h}"; }
ROUNDS=${ROUNDS:-2} interleave hold scripts/suites/squares.json h20 h150 h500
for f in "$OUT"/hold-h*-[0-9].json; do echo "== $(basename "$f")"; python3 scripts/gemm-table.py "$f" | grep -E "^\| (2048|3072|4096|6144|8192)×(2048|3072|4096|6144|8192)×"; done > "$OUT/hold-table.md" 2>&1
python3 - "$OUT"/hold-h*-[0-9].json <<'PY' | tee -a "$DEV_LOG"
import json, sys, collections
holds = collections.defaultdict(list)
for f in sys.argv[1:]:
    mode = f.rsplit("/", 1)[-1].split("-")[1]
    for r in json.load(open(f))["results"]:
        if r.get("hold_us") is not None:
            holds[(mode, r["backend"])].append(r["hold_us"])
for (m, b), v in sorted(holds.items()):
    print(f"hold {m} {b}: {min(v):.0f}-{max(v):.0f} us over {len(v)} records")
PY
archive_runs hold
log done
