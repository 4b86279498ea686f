"""Compares the outputs that mha_bench variants wrote against PyTorch (float64) and each other.

Usage: python3 mha_compare.py DIR VARIANT...   (DIR holds VARIANT_*.bin and the VARIANT_in*.bin inputs)
"""
import glob
import os
import re
import sys

import torch


def load(path, shape):
    raw = torch.from_file(path, size=int(torch.tensor(shape).prod()), dtype=torch.int16)
    return raw.view(torch.bfloat16).reshape(shape).to(torch.float64)


d, variants = sys.argv[1], sys.argv[2:]
for out in sorted(glob.glob(os.path.join(d, variants[0] + "_b*.bin"))):
    tag = os.path.basename(out)[len(variants[0]) + 1 : -4]
    b, h, hkv, sq, sk, hd, c = map(int, re.findall(r"\d+", tag))
    ins = [
        load(os.path.join(d, f"{variants[0]}_in{t}_b{b}_h{h}_hkv{hkv}_sq{sq}_sk{sk}_d{hd}.bin"),
             (b, h if t == 0 else hkv, sq if t == 0 else sk, hd))
        for t in range(3)
    ]
    q, k, v = ins[0], ins[1].repeat_interleave(h // hkv, 1), ins[2].repeat_interleave(h // hkv, 1)
    s = q @ k.transpose(-1, -2) / hd**0.5
    if c:
        i = torch.arange(sq)[:, None]
        j = torch.arange(sk)[None, :]
        s = s.masked_fill(j > i + sk - sq, float("-inf"))
    ref = torch.softmax(s, -1) @ v
    line = [tag]
    for var in variants:
        o = load(os.path.join(d, f"{var}_{tag}.bin"), (b, h, sq, hd))
        rel = ((o - ref).norm() / ref.norm()).item()
        line.append(f"{var}: rel_l2 {rel:.2e} max_abs {(o - ref).abs().max().item():.2e}")
    print("  ".join(line))
