#!/usr/bin/env python3
"""The dev bench's output (scripts/session46-sweep.sh) as a table of pick regret: per shape the
pick's time, the best config's, their ratio, the best of each tile (its best split) and cuBLAS.
Usage: sweep-regret.py SWEEP.txt [TILE ...] (tiles to list as columns; default all seen)."""
import re
import sys

head = re.compile(r"^== (\w+) M=(\d+) N=(\d+) K=(\d+).*\| pick (\S+) split (\d+)")
row = re.compile(r"^  ([* ]) (\S+) split (\d+)\s+([\d.]+) us")
cub = re.compile(r"^    cuBLAS\s+([\d.]+) us")
cases, cur = [], None
for line in open(sys.argv[1]):
    if m := head.match(line):
        cur = {"shape": f"{m[2]}x{m[3]}x{m[4]}", "dt": m[1], "pick": None, "rows": {}, "cublas": None}
        cases.append(cur)
    elif cur and (m := row.match(line)):
        key = (m[2], int(m[3]))
        cur["rows"][key] = float(m[4])
        if m[1] == "*":
            cur["pick"] = key
    elif cur and (m := cub.match(line)):
        cur["cublas"] = float(m[1])
tiles = sys.argv[2:] or sorted({t for c in cases for (t, _) in c["rows"]})
print("| shape | pick | pick µs | best | best µs | pick/best | cuBLAS/pick | " + " | ".join(tiles) + " |")
print("|" + " --- |" * (7 + len(tiles)))
regs = []
for c in cases:
    if not c["rows"] or c["pick"] is None:
        continue
    bk = min(c["rows"], key=c["rows"].get)
    p, b = c["rows"][c["pick"]], c["rows"][bk]
    regs.append(p / b)
    per = []
    for t in tiles:
        v = [u for (tt, s), u in c["rows"].items() if tt == t]
        per.append(f"{min(v):.1f}" if v else "–")
    print(f"| {c['shape']} | {c['pick'][0]}/{c['pick'][1]} | {p:.2f} | {bk[0]}/{bk[1]} | {b:.2f} | "
          f"{p / b:.3f} | {c['cublas'] / p:.3f} | " + " | ".join(per) + " |")
if regs:
    import math
    g = math.exp(sum(map(math.log, regs)) / len(regs))
    print(f"\n{len(regs)} shapes: geomean pick/best {g:.4f}, worst {max(regs):.3f}, "
          f"{sum(r > 1.03 for r in regs)} above 1.03, {sum(r > 1.10 for r in regs)} above 1.10")
