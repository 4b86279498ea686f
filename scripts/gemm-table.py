#!/usr/bin/env python3
"""Ours vs cuBLAS per GEMM shape from one or more results files (same run): median µs of each,
the ratio cuBLAS/ours (>1: ours faster), TFLOP/s, and the kernel variant that ran; then the
geomean over the bf16/fp16 cases and the worst case. A ratio marked † set records timed with
different launches per sample side by side (the gate keeps each case's stored batch, so peers of
one shape can differ; KERNELGATE_BATCH times them alike). Usage: gemm-table.py results.json..."""
import gzip, json, math, sys

rows = {}
for f in sys.argv[1:]:
    for r in json.load(gzip.open(f) if f.endswith(".gz") else open(f))["results"]:
        if r["kernel"] != "gemm" or r.get("latency_ms") is None:
            continue
        key = (r["problem_size"]["m"], r["problem_size"]["n"], r["problem_size"]["k"], r["dtype"])
        rows.setdefault(key, {})[r["backend"]] = r
print("| m×n×k | dtype | ours µs | cuBLAS µs | ours/cuBLAS speed | ours TFLOP/s | variant |")
print("| --- | --- | ---: | ---: | ---: | ---: | --- |")
ratios = []
unlike = 0
timing = lambda r: (max(1, r.get("batch", 1)), r.get("graph", False) and r.get("batch", 1) > 1)
for (m, n, k, dt), b in sorted(rows.items(), key=lambda kv: (kv[0][3], kv[0][0] * kv[0][1] * kv[0][2])):
    o, c = b.get("cuda"), b.get("cublas")
    if not o or not c:
        continue
    ratio = c["latency_ms"] / o["latency_ms"]
    mark = " †" if timing(o) != timing(c) else ""
    unlike += bool(mark)
    if dt in ("bf16", "fp16"):
        ratios.append((ratio, f"{m}×{n}×{k} {dt}"))
    print(f"| {m}×{n}×{k} | {dt} | {o['latency_ms']*1e3:.1f} | {c['latency_ms']*1e3:.1f} | {ratio:.2f}×{mark} | "
          f"{o.get('tflops') or 0:.1f} | {o.get('variant','')[:70]} |")
if unlike:
    print(f"\n† {unlike} ratio(s) of records timed with different launches per sample (ours / cuBLAS)")
if ratios:
    g = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
    w = min(ratios)
    print(f"\ngeomean ours/cuBLAS over {len(ratios)} bf16/fp16 cases: {g:.3f}×; worst {w[0]:.2f}× ({w[1]})")
