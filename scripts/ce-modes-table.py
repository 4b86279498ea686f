#!/usr/bin/env python3
"""Table of scripts/session17-ce.sh's results: per cross-entropy case, the median time under each
KERNELGATE_CE_FWD mode (best of its rounds), the fraction of copy bandwidth, the kernel that ran
and whether every mode's output was correct.
Usage: ce-modes-table.py DIR [MODE ...]   (DIR holds ce-<mode>-<round>.json)."""
import glob
import json
import os
import re
import sys

d = sys.argv[1]
modes = sys.argv[2:] or ["off", "regs", "rows"]
res, copy = {}, {}
for mode in modes:
    for f in sorted(glob.glob(os.path.join(d, f"ce-{mode}-*.json"))):
        j = json.load(open(f))
        copy[mode] = j["ceilings"]["copy_gbps"]
        for r in j["results"]:
            if r.get("latency_ms") is None:
                continue
            k = r["case"]
            e = res.setdefault(k, {})
            prev = e.get(mode)
            ok = r.get("correct", r.get("verified", True))
            if prev is None or r["latency_ms"] < prev[0]:
                kern = re.match(r"(kg_\w+)", r.get("variant", "")).group(1) if r.get("variant") else "?"
                e[mode] = (r["latency_ms"], r.get("gbps") or 0, kern, ok if prev is None else (ok and prev[3]))
def key(c):
    m = re.search(r"m(\d+)_n(\d+)_(\w+)$", c)
    return (m.group(3), int(m.group(1)), int(m.group(2))) if m else (c, 0, 0)
print("copy GB/s: " + ", ".join(f"{m} {copy.get(m, 0):.0f}" for m in modes))
print(f"| case | " + " | ".join(f"{m} µs (frac)" for m in modes) + " | best | kernels |")
print("|---|" + "---|" * (len(modes) + 2))
for c in sorted(res, key=key):
    e = res[c]
    cells, best = [], None
    for m in modes:
        if m in e:
            t, g, k, ok = e[m]
            cells.append(f"{t*1e3:.2f} ({g/copy[m]:.3f}){'' if ok else ' WRONG'}")
            if best is None or t < e[best][0]:
                best = m
        else:
            cells.append("–")
    kern = ", ".join(f"{m}: {e[m][2].replace('kg_cross_entropy_', '')}" for m in modes if m in e)
    print(f"| {c.replace('cross_entropy::cuda::', '')} | " + " | ".join(cells) + f" | {best} | {kern} |")
