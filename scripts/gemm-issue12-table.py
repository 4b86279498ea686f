#!/usr/bin/env python3
"""Issue 12's table across machines: ours / cuBLAS speed (cuBLAS µs / ours µs, same run) for the
issue's shapes, then the geomean over every bf16/fp16 case and the worst case, one column per
machine. Usage: gemm-issue12-table.py SESSION/MACHINE... (each docs/gate/SESSION/MACHINE/results-gemm.json.gz)."""
import gzip, json, sys, math
machines = sys.argv[1:]
shapes = [(2048,2048,2048),(3072,3072,3072),(4096,4096,4096),(6144,6144,6144),(8192,8192,8192),(8192,8,8192),(8192,16,4096),(2048,3,777),(16,16,65536),(8192,1024,8192),(4096,1000,4096),(2048,512,4096),(1,4096,4096),(1000,1000,100),(1000,1000,1000),(5,3000,1000),(3,5000,77)]
data = {}
for m in machines:
    f = f"docs/gate/{m}/results-gemm.json.gz"
    rs = {}
    for r in json.load(gzip.open(f))["results"]:
        p = r["problem_size"]; rs[(p["m"],p["n"],p["k"],r["dtype"],r["backend"])] = r["latency_ms"]
    data[m] = rs
print("| shape | dtype | " + " | ".join(m.split('/')[-1] for m in machines) + " |")
print("| --- | --- |" + " --- |"*len(machines))
def ratio(rs, s, dt):
    o = rs.get(s+(dt,"cuda")); c = rs.get(s+(dt,"cublas"))
    return c/o if o and c else None
for s in shapes:
    for dts in (["bf16","fp16"],["fp32"]) if s in [(8192,8,8192),(4096,4096,4096)] else (["bf16","fp16"],):
        cells = []
        for m in machines:
            rr = [ratio(data[m], s, d) for d in dts]
            cells.append(" / ".join("%.3f"%x if x else "–" for x in rr))
        print(f"| {s[0]}×{s[1]}×{s[2]} | {' / '.join(dts)} | " + " | ".join(cells) + " |")
# geomean + worst
cells=[]; worst=[]
for m in machines:
    rs=data[m]; lr=[]
    for (a,b,c,dt,be),v in rs.items():
        if be=="cuda" and dt in ("bf16","fp16"):
            x=ratio(rs,(a,b,c),dt)
            if x: lr.append((x,f"{a}×{b}×{c} {dt}"))
    g=math.exp(sum(math.log(x) for x,_ in lr)/len(lr)); w=min(lr)
    cells.append(f"**{g:.3f}** ({len(lr)})"); worst.append(f"{w[0]:.2f} ({w[1]})")
print("| geomean, bf16/fp16 cases | | " + " | ".join(cells)+" |")
print("| worst case | | " + " | ".join(worst)+" |")
# The squares bar (2048^3-8192^3 at or above 1.0x cuBLAS): per square and dtype, the readings'
# range and mean over the machines, and how many readings of all reach 1.000.
print()
print("| square | dtype | min | mean | max | readings ≥ 1.000 |")
print("| --- | --- | ---: | ---: | ---: | ---: |")
total = at_or_above = 0
for n in (2048, 3072, 4096, 6144, 8192):
    for dt in ("bf16", "fp16"):
        xs = [x for x in (ratio(data[m], (n, n, n), dt) for m in machines) if x]
        if not xs:
            continue
        ok = sum(1 for x in xs if round(x, 3) >= 1.0)
        total += len(xs); at_or_above += ok
        print(f"| {n}³ | {dt} | {min(xs):.3f} | {sum(xs) / len(xs):.3f} | {max(xs):.3f} | {ok} of {len(xs)} |")
print(f"| all | | | | | **{at_or_above} of {total}** |")
