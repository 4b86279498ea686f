#!/usr/bin/env python3
"""Ours vs torch SDPA per attention shape from `kernelgate run` results (same run): TFLOP/s of
each, the ratio (torch time / ours, >1: ours faster), our kernel variant; then the geomean and
the bf16 d128 S >= 4096 rows. Usage: bars-table.py results.json..."""
import json, math, sys

rows = {}
for f in sys.argv[1:]:
    for r in json.load(open(f))["results"]:
        if r["kernel"] != "mha" or r.get("latency_ms") is None:
            continue
        rows.setdefault(r["case"].split("::")[-1], {})[r["backend"]] = r
print("| shape | ours / SDPA TFLOP/s | ratio | kernel |")
print("| --- | ---: | ---: | --- |")
ratios, bar = [], []
for name, b in sorted(rows.items()):
    o, t = b.get("cuda"), b.get("torch")
    if not o or not t:
        continue
    ratio = t["latency_ms"] / o["latency_ms"]
    ratios.append(ratio)
    p = o["problem_size"]
    if o["dtype"] == "bf16" and p["d"] == 128 and p["sk"] >= 4096:
        bar.append((ratio, name))
    print(f"| {name} | {o['tflops']:.0f} / {t['tflops']:.0f} | {ratio:.2f} | `{o.get('variant', '').split(' ')[0]}` |")
if ratios:
    g = math.exp(sum(map(math.log, ratios)) / len(ratios))
    print(f"\ngeomean over {len(ratios)} shapes: {g:.3f}")
if bar:
    met = sum(r >= 1.0 for r, _ in bar)
    print(f"bf16 d128 S>=4096: {met} of {len(bar)} at >= 1.0x; range {min(bar)[0]:.2f}-{max(bar)[0]:.2f}")
