#!/usr/bin/env python3
"""Issue 13's table from results files of memory-bound suites: per GPU model, family and M, the
range (over N and over the files given) of GB/s and of the fraction of the copy bandwidth measured
in the same run, and the geomean of the fraction per model.

Usage: scripts/mem-table.py [--per-shape] RESULTS.json[.gz]...   (results files of
`kernelgate run` or of the test binary; our `cuda` cases only). --per-shape: a row per family, M
and N instead, with the median over the files (machines) of GB/s and of the fraction. For each
file it also prints the longest case: the largest gap between consecutive records' timestamps
(the first measured from the run's start), at the timestamps' one-second resolution."""
import gzip
import json
import math
import re
import sys
from collections import defaultdict
from datetime import datetime


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def stamp(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00"))


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


per_shape = "--per-shape" in sys.argv
paths = [a for a in sys.argv[1:] if a != "--per-shape"]
rows = defaultdict(list)  # (model, family, m, n) -> [(gbps, frac)]
fracs = defaultdict(list)  # model -> [frac]
machines = defaultdict(set)
walls = []  # (path, longest gap s, case)
for path in paths:
    doc = load(path)
    prev = stamp(doc["started"]) if isinstance(doc.get("started"), str) else None
    longest = (0.0, "")
    for r in doc["results"]:
        if prev is not None and r.get("date"):
            t = stamp(r["date"])
            longest = max(longest, ((t - prev).total_seconds(), r["case"]))
            prev = t
    walls.append((path, *longest))
    for r in doc["results"]:
        if r.get("backend") != "cuda" or r.get("roofline_frac") is None:
            continue
        m = int(re.search(r"::m(\d+)_", r["case"]).group(1))
        n = int(re.search(r"_n(\d+)_", r["case"]).group(1))
        model = "H200" if "H200" in r["gpu_model"] else "H100"
        rows[(model, r["kernel"], m, n)].append((r["gbps"], r["roofline_frac"]))
        fracs[model].append(r["roofline_frac"])
        machines[model].add(r["device_uuid"][4:12])

models = sorted({k[0] for k in rows})
if per_shape:
    print("| family | M | N | " + " | ".join(f"{mo} GB/s (fraction)" for mo in models) + " |")
    print("|---|---:|---:|" + "---:|" * len(models))
    for fam, m, n in sorted({k[1:] for k in rows}):
        cells = []
        for mo in models:
            v = rows.get((mo, fam, m, n))
            cells.append(f"{median(x[0] for x in v):.0f} ({median(x[1] for x in v):.2f})" if v else "–")
        print(f"| {fam} | {m} | {n} | " + " | ".join(cells) + " |")
else:
    print("| family | M | " + " | ".join(f"{mo} GB/s | {mo} fraction" for mo in models) + " |")
    print("|---|---:|" + "---:|---:|" * len(models))
    for fam, m in sorted({k[1:3] for k in rows}):
        cells = []
        for mo in models:
            v = [x for k, xs in rows.items() if k[:3] == (mo, fam, m) for x in xs]
            if not v:
                cells += ["–", "–"]
                continue
            g = [x[0] for x in v]
            f = [x[1] for x in v]
            cells += [f"{min(g):.0f}–{max(g):.0f}", f"{min(f):.2f}–{max(f):.2f}"]
        print(f"| {fam} | {m} | " + " | ".join(cells) + " |")
print()
for mo in models:
    f = fracs[mo]
    gm = math.exp(sum(math.log(x) for x in f) / len(f))
    print(f"{mo}: {len(f)} records from {len(machines[mo])} machines ({', '.join(sorted(machines[mo]))}); geomean fraction {gm:.3f}, lowest {min(f):.2f}")
for path, gap, case in walls:
    if case:
        print(f"{path}: longest case at most {gap + 1:.0f} s ({case})")
