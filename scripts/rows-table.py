#!/usr/bin/env python3
"""Memory-bound families from `kernelgate run` results: per family and M, the range over N of
the fraction of copy bandwidth measured in the same run (roofline_frac) and of GB/s, the bar of
issue 13 for that M, the cases under it, and the geomean of the fractions. Usage:
rows-table.py results.json"""
import json, math, sys
from collections import defaultdict

BARS = {"cross_entropy": (0.75, 0.85), "cross_entropy_bwd": (0.75, 0.85)}  # (M=4096, M>=16384)
cells, fracs, misses, n = defaultdict(list), [], [], 0
for f in sys.argv[1:]:
    for r in json.load(open(f))["results"]:
        fr = r.get("roofline_frac")
        if fr is None:
            continue
        n += 1
        m, k = r["problem_size"]["m"], r["kernel"]
        cells[(k, m)].append((fr, r["gbps"], r["problem_size"].get("n")))
        fracs.append(fr)
        short, long_ = BARS.get(k, (0.75, 0.90))
        bar = short if m <= 4096 else long_
        if fr < bar:
            misses.append(f"{k} {m}x{r['problem_size'].get('n')}: {fr:.2f} < {bar}")
ms = sorted({m for _, m in cells})
print("| family | " + " | ".join(f"M = {m}" for m in ms) + " |")
print("| --- | " + " | ".join("---" for _ in ms) + " |")
for fam in sorted({k for k, _ in cells}):
    row = []
    for m in ms:
        v = cells.get((fam, m))
        row.append(f"{min(v)[0]:.2f}–{max(v)[0]:.2f} ({min(x[1] for x in v):.0f}–{max(x[1] for x in v):.0f} GB/s)" if v else "")
    print(f"| {fam} | " + " | ".join(row) + " |")
print(f"\ngeomean fraction over {n} cases: {math.exp(sum(map(math.log, fracs)) / len(fracs)):.3f}")
print("under the bar: " + ("; ".join(misses) if misses else "none"))
