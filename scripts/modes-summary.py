#!/usr/bin/env python3
"""Per case and run: median, p10, p90 and the share of samples more than 10% above p10 (a slow
mode), from kernelgate results files given as MODE=FILE (several per mode allowed).
Usage: modes-summary.py [--filter SUBSTR] MODE=FILE..."""
import json
import sys

args = sys.argv[1:]
filt = ""
if args[:1] == ["--filter"]:
    filt, args = args[1], args[2:]
rows = {}
for a in args:
    mode, path = a.split("=", 1)
    for r in json.load(open(path))["results"]:
        s = sorted(r.get("samples_ms") or [])
        if not s or filt not in r["case"]:
            continue
        q = lambda f: s[min(len(s) - 1, int(f * len(s)))] * 1e3
        slow = sum(1 for x in s if x * 1e3 > 1.1 * q(0.10)) / len(s)
        rows.setdefault(r["case"], []).append(
            (mode, len(s), r["latency_ms"] * 1e3, q(0.10), q(0.90), slow, r.get("batch"), r.get("graph")))
print(f"{'case':45s} {'mode':8s} {'n':>5s} {'median':>8s} {'p10':>8s} {'p90':>8s} {'slow%':>6s} batch graph")
for c in sorted(rows):
    for m, n, med, p10, p90, slow, b, g in rows[c]:
        print(f"{c.split('::',1)[1][:45]:45s} {m:8s} {n:5d} {med:8.2f} {p10:8.2f} {p90:8.2f} {100*slow:6.1f} {b} {g}")
