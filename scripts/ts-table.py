#!/usr/bin/env python3
"""Session 32: the TMA-store epilogue bench (scripts/session32-ts.sh) as a table.

ts-table.py FILE...: per shape, dtype and tile, every timed median (µs, split 1) in file order,
their median, cuBLAS's median over the same processes, and the ratio cuBLAS / tile. A round
header "== round R SHAPE DTYPE LABEL" whose LABEL is not the tile's name (a build variant of
scripts/session32-next.sh) names the rows after it TILE@LABEL."""
import re
import statistics as st
import sys
from collections import defaultdict

HEAD = re.compile(r"^== (bf16|f16) M=(\d+) N=(\d+) K=(\d+)")
ROW = re.compile(r"^  [ *] (\S+) split 1\s+([\d.]+) us")
CUB = re.compile(r"^    cuBLAS\s+([\d.]+) us")
ROUND = re.compile(r"^== round \d+ \S+ \S+ (\S+)$")

for path in sys.argv[1:]:
    times = defaultdict(list)
    cub = defaultdict(list)
    key = None
    label = None
    for line in open(path):
        m = ROUND.match(line)
        if m:
            label = m[1]
            continue
        if line.startswith("== round"):
            label = None
            continue
        m = HEAD.match(line)
        if m:
            key = (f"{m[2]}x{m[3]}x{m[4]}", m[1])
            continue
        m = ROW.match(line)
        if m and key:
            tile = m[1] if label in (None, m[1], "x") else f"{m[1]}@{label}"
            times[key + (tile,)].append(float(m[2]))
            continue
        m = CUB.match(line)
        if m and key:
            cub[key].append(float(m[1]))
    print(f"\n{path}\n")
    print("| shape | dtype | tile | medians (µs, one per process) | median | cuBLAS median | cuBLAS / tile |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: |")
    for (shape, dt, tile), v in sorted(times.items(), key=lambda kv: (int(kv[0][0].split("x")[0]), kv[0][1], kv[0][2])):
        c = st.median(cub[(shape, dt)])
        m = st.median(v)
        print(f"| {shape} | {dt} | {tile} | {' / '.join(f'{x:.2f}' for x in v)} | {m:.2f} | {c:.2f} | {c / m:.3f} |")
