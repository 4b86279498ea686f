import json, sys, glob, statistics, math
d=sys.argv[1]
runs={}
for f in sorted(glob.glob(d+"/c2h-*-*.json")):
    mode=f.split("c2h-")[1].split("-")[0]
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
    cfg=lambda r: (r.get("configuration") or r.get("config") or "")
    def short(r):
        s=json.dumps({k:v for k,v in r.items() if k in ("configuration","kernels","config")})
        return s
    oc=o[0].get("kernels") or o[0].get("configuration"); nc=n[0].get("kernels") or n[0].get("configuration")
    shape=c.split("::")[2]
    rat.append(nm/om)
    print(f"| {shape.rsplit('_',1)[0]} | {shape.rsplit('_',1)[1]} | {str(oc)[:40]} | {om:.2f} | {str(nc)[:40]} | {nm:.2f} | {nm/om:.3f} | {cbm:.2f} | {cbm/nm:.3f} | {cbm/om:.3f} |")
print("geomean new/old", math.exp(sum(map(math.log,rat))/len(rat)))
