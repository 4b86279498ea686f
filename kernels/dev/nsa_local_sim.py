# Session 21: simulates the suite generator's block selections (own block + S-1 distinct random earlier
# blocks) and counts, per token range of R tokens, the 16-row tiles a CTA of kernels/nsa_local.cu
# forms (pairs grouped by block), how full they are, and the distinct blocks whose K/V it loads.
# Output: docs/kernels/session21/nsa-local-simulation.txt. Run: python3 kernels/dev/nsa_local_sim.py
import numpy as np, math
rng=np.random.default_rng(1)
def sel(T,S,bs):
    rows=[]
    for t in range(T):
        own=t//bs
        if own < S: rows.append(list(range(own+1)))
        else:
            picks=set()
            while len(picks)<S-1: picks.add(int(rng.integers(0,own)))
            rows.append(sorted(picks)+[own])
    return rows
def sim(T,S,bs,D,R,M=16):
    rows=sel(T,S,bs)
    tiles=0;pairs=0;blocks=0
    for c0 in range(0,T,R):
        cnt={}
        for t in range(c0,min(T,c0+R)):
            for b in rows[t]: cnt[b]=cnt.get(b,0)+1
        tiles+=sum(math.ceil(c/M) for c in cnt.values()); pairs+=sum(cnt.values()); blocks+=len(cnt)
    return pairs,tiles,pairs/(tiles*M),blocks
for (T,S,bs,D) in [(2048,4,32,64),(8192,4,32,64),(4096,4,64,128),(512,8,32,64),(8192,16,32,64),(16384,16,64,128)]:
    print(f"T{T} S{S} bs{bs} D{D}")
    for R in (64,128,256,512):
        p,t,f,b=sim(T,S,bs,D,R)
        kv=b*bs*D*2*2
        print(f"  R{R}: pairs {p} m16-tiles {t} full {f:.2f} blocks-loaded {b} kv {kv/1e6:.1f} MB/head  ctas/head {math.ceil(T/R)}")
