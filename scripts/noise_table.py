#!/usr/bin/env python3
"""The table of repeated `kernelgate run` readings (scripts/session48-noise.sh, session48-hold.sh):
noise_table.py DIR [PREFIX] reads DIR/PREFIX-N.json (PREFIX default `noise`, N = 1, 2, ...) and
prints, per `cuda` case, every run's time beside cuBLAS's from the same run and their ratio, then
the minimum, median and maximum of each and how many ratios are at least 1.000."""
import glob, json, os, re, statistics, sys
prefix = sys.argv[2] if len(sys.argv) > 2 else "noise"
runs = sorted(glob.glob(os.path.join(sys.argv[1], f"{prefix}-*.json")),
              key=lambda f: int(re.search(rf"{prefix}-(\d+)\.json$", f).group(1)))
cases = {}
for f in runs:
    res = json.load(open(f))["results"]
    t = {r["case"]: r["latency_ms"] * 1000 for r in res}
    for c, v in t.items():
        if "::cuda::" in c:
            cb = t.get(c.replace("::cuda::", "::cublas::"))
            cases.setdefault(c.split("::")[-1], []).append((v, cb))
print("| case | run | ours µs | cuBLAS µs | cuBLAS / ours |")
print("| --- | ---: | ---: | ---: | ---: |")
for c, xs in cases.items():
    for i, (v, cb) in enumerate(xs, 1):
        print(f"| {c} | {i} | {v:.2f} | {cb:.2f} | {cb / v:.3f} |")
print()
print("| case | runs | ours: min / median / max µs | cuBLAS: min / median / max µs | ratio: min / median / max | ratios >= 1.000 |")
print("| --- | ---: | --- | --- | --- | ---: |")
for c, xs in cases.items():
    o = [v for v, _ in xs]; b = [cb for _, cb in xs]; q = [cb / v for v, cb in xs]
    f3 = lambda a, p: " / ".join(f"{x:.{p}f}" for x in (min(a), statistics.median(a), max(a)))
    print(f"| {c} | {len(xs)} | {f3(o, 2)} | {f3(b, 2)} | {f3(q, 3)} | {sum(x >= 1 for x in q)} of {len(q)} |")
