#!/usr/bin/env python3
"""The nsa G = 1 cases of scripts/suites/nsa-g1-dense.json beside dense causal attention of the same
batch, heads, length and head dim, from one or more `kernelgate run` results files of that suite
(the median over the files per case): the nsa time, its nominal TFLOP/s, the time 60 nominal
TFLOP/s needs, and the dense causal attention's time with our mha kernel and with torch SDPA.
Usage: nsa-dense-table.py RESULTS.json[.gz]..."""
import gzip
import json
import statistics
import sys


def load(paths):
    times, recs = {}, {}
    for path in paths:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            for r in json.load(f)["results"]:
                if r.get("latency_ms"):
                    times.setdefault(r["case"], []).append(r["latency_ms"] * 1000)
                    recs[r["case"]] = r
    return {c: (statistics.median(t), recs[c]) for c, t in times.items()}


cases = load(sys.argv[1:])
dense = {}
for c, (us, r) in cases.items():
    if r["kernel"] == "mha":
        p = r["problem_size"]
        dense[(p["b"], p["h"], p["sq"], p["d"], r["backend"])] = us
print("| case (bf16) | kernel | µs | nominal TFLOP/s | µs for 60 | dense causal, ours µs | "
      "dense causal, SDPA µs | nsa / SDPA dense |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for c, (us, r) in sorted(cases.items(), key=lambda kv: kv[1][1].get("tflops") or 0):
    if r["kernel"] != "nsa":
        continue
    p = r["problem_size"]
    need = us * r["tflops"] / 60.0
    key = (p["b"], p["hq"], p["t"], p["d"])
    ours, sdpa = dense.get(key + ("cuda",)), dense.get(key + ("torch",))
    name = c.split("::")[-1].replace("_bf16", "")
    fmt = lambda x: f"{x:.1f}" if x is not None else "–"
    ratio = f"{us / sdpa:.2f}" if sdpa else "–"
    print(f"| {name} | {r['variant'].split(' ')[0]} | {us:.1f} | {r['tflops']:.1f} | {need:.1f} | "
          f"{fmt(ours)} | {fmt(sdpa)} | {ratio} |")
