#!/usr/bin/env python3
"""A model of kernels/gemm_wgmma.cuh's in-place epilogue (uc_store_row, realign8, store8_span) for one
row of one tile, run over every row alignment (64 element offsets), tile width BN 64..256 and
width N - cbase from -3 to BN + 19: the stores must write exactly the tile's elements inside C,
each value right, each store naturally aligned, none twice. Session 39; keep it in step with
the kernel when the epilogue changes. Usage: python3 kernels/dev/uc_store_model.py"""
def sel4(o,i): return o[i]
def realign8(prev, own, e):
    w=prev+own; k=e>>1
    a=[w[i+1] if (k&1) else w[i] for i in range(7)]
    b=[a[i+2] if (k&2) else a[i] for i in range(5)]
    for i in range(4): b[i]= w[i+4] if (k&4) else b[i]
    sh=16*(e&1)
    return [((b[q] >> sh) | (b[q+1] << (32-sh))) & 0xffffffff if sh else b[q] for q in range(4)]
def store8_span(mem, p, o, lo, hi, log):
    a=max(lo,0); b=min(hi,8)
    def el(i): return (o[i>>1] >> (16*(i&1))) & 0xffff
    if a==0 and b==8:
        assert p%8==0; log.append((p,8))
        for i in range(8): mem[p+i]=el(i)
        return
    if a<b and (a&1): mem[p+a]=el(a); log.append((p+a,1)); a+=1
    if a+2<=b and (a&2):
        assert (p+a)%2==0; mem[p+a]=el(a); mem[p+a+1]=el(a+1); log.append((p+a,2)); a+=2
    if a+4<=b:
        assert (p+a)%4==0
        for i in range(4): mem[p+a+i]=el(a+i)
        log.append((p+a,4)); a+=4
    if a+2<=b:
        assert (p+a)%2==0; mem[p+a]=el(a); mem[p+a+1]=el(a+1); log.append((p+a,2)); a+=2
    if a<b: mem[p+a]=el(a); log.append((p+a,1))
def row(BN, base, width):
    # element addresses: rowp = base (element index in memory), values v(x)=x+1
    s=base & 7; e=8-s
    val=lambda x:(x*7+3)&0xffff
    blocks={(j,t):[ (val(32*j+8*t+2*q) | (val(32*j+8*t+2*q+1)<<16)) for q in range(4)] for j in range(BN//32) for t in range(4)}
    mem={}; log=[]
    carry=[[0]*4 for _ in range(4)]
    state={t:dict(first=None,cut=None,cut_x0=BN,own=None) for t in range(4)}
    for j in range(BN//32):
        owns=[blocks[(j,t)] for t in range(4)]
        for t in range(4):
            v=owns[(t+3)&3]
            prev=carry[t] if t==0 else v
            newcarry=v
            own=owns[t]
            out=realign8(prev,own,e)
            x0=32*j+8*t-s
            st=state[t]; st['own']=own
            if j==0: st['first']=out
            elif x0+8<=width:
                assert (base+x0)%8==0
                for i in range(8): mem[base+x0+i]=(out[i>>1]>>(16*(i&1)))&0xffff
                log.append((base+x0,8))
            elif x0<width: st['cut_x0']=x0; st['cut']=out
            carry[t]=newcarry
    for t in range(4):
        st=state[t]
        store8_span(mem, base-s+8*t, st['first'], s-8*t, width+s-8*t, log)
        if st['cut_x0']<BN: store8_span(mem, base+st['cut_x0'], st['cut'], 0, width-st['cut_x0'], log)
        if t==3 and s!=0:
            tail=realign8(st['own'],[0]*4,e)
            store8_span(mem, base+BN-s, tail, 0, min(s, width-(BN-s)), log)
    # check
    want={base+x: val(x) for x in range(min(width,BN))}
    assert mem==want, (BN,base,width, sorted(set(mem)^set(want))[:10])
    # no overlapping stores
    cov=[]
    for (p,n) in log: cov+=list(range(p,p+n))
    assert len(cov)==len(set(cov)), "overlap"
for BN in [64,128,192,256]:
    for base in range(0,64):
        for width in list(range(-3,BN+20)):
            row(BN, 1000*8+base, width)
print("ok")
