#!/usr/bin/env python3
"""The same-run table of scripts/session47-c2-harness.sh's rounds (DIR holds the unpacked
c2h-{new,old}-N.json): per gemm::cuda case the old and new plans' entry, median µs over the
rounds, new / old, and cuBLAS's median over both modes' runs.
Usage: c2h-table.py DIR [PREFIX] (PREFIX as the script's, default c2h; x12 for session47-extra.sh)"""
import json, sys, glob, statistics, math
d=sys.argv[1]
pre=(sys.argv[2] if len(sys.argv) > 2 else "c2h")+"-"
runs={}
for f in sorted(glob.glob(d+"/"+pre+"*-*.json")):
    mode=f.split(pre)[-1].split("-")[0]
    for r in json.load(open(f))["results"]:
        runs.setdefault((r["case"],mode),[]).append(r)
cases=sorted({c for c,_ in runs if "::cuda::" in c})
rat=[]; print("| shape | dtype | old plan | old µs | new plan | new µs | new/old | cuBLAS µs | cuBLAS/new | cuBLAS/old |")
print("|---|---|---|---:|---|---:|---:|---:|---:|---:|")
for c in cases:
    o=runs.get((c,"old"),[]); n=runs.get((c,"new"),[])
    cb=c.replace("::cuda::","::cublas::")
    cbs=[r["latency_ms"] for mo in ("old","new") for r in runs.get((cb,mo),[])]
    if not o or not n: continue
    om=statistics.median(r["latency_ms"] for r in o)*1e3; nm=statistics.median(r["latency_ms"] for r in n)*1e3
    cbm=statistics.median(cbs)*1e3
    entry=lambda r: r["variant"].split(" ")[0].replace("gemm_wgmma_", "")
    oc=entry(o[0]); nc=entry(n[0])
    shape=c.split("::")[2]
    rat.append(nm/om)
    print(f"| {shape.rsplit('_',1)[0]} | {shape.rsplit('_',1)[1]} | {oc} | {om:.2f} | {nc} | {nm:.2f} | {nm/om:.3f} | {cbm:.2f} | {cbm/nm:.3f} | {cbm/om:.3f} |")
print("geomean new/old", math.exp(sum(map(math.log,rat))/len(rat)))
