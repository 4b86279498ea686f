#!/usr/bin/env python3
"""Per-opcode executed instructions and warp-stall samples from Nsight Compute source pages
(`ncu --import R.ncu-rep --page source --csv`), several kernels side by side: the opcode table
(millions of warp instructions executed), then each kernel's stall reasons and the opcodes that
hold the most stall samples. Usage: ncu-opcodes.py NAME=SOURCE.csv ..."""
import csv
import sys
from collections import Counter


def load(path):
    rows = list(csv.reader(open(path)))
    hdr = rows[1]
    idx = {h: i for i, h in enumerate(hdr)}
    executed, samples, reasons = Counter(), Counter(), Counter()
    stall_cols = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    for r in rows[2:]:
        if len(r) < len(hdr):
            continue
        toks = r[idx["Source"]].split()
        if not toks:
            continue
        op = (toks[1] if toks[0].startswith("@") else toks[0]).split(".")[0]
        executed[op] += int(r[idx["Instructions Executed"]] or 0)
        samples[op] += int(r[idx["Warp Stall Sampling (All Samples)"]] or 0)
        for c in stall_cols:
            reasons[c[len("stall_"):]] += int(r[idx[c]] or 0)
    return executed, samples, reasons


kernels = {}
for a in sys.argv[1:]:
    name, path = a.split("=", 1)
    kernels[name] = load(path)
names = list(kernels)
ops = Counter()
for e, _, _ in kernels.values():
    ops.update(e)
print("| opcode | " + " | ".join(f"{n} (M)" for n in names) + " |")
print("|---|" + "---:|" * len(names))
for op, _ in ops.most_common(30):
    print(f"| {op} | " + " | ".join(f"{kernels[n][0][op] / 1e6:.2f}" for n in names) + " |")
print("| **total** | " + " | ".join(f"**{sum(kernels[n][0].values()) / 1e6:.1f}**" for n in names) + " |")
for n in names:
    _, samples, reasons = kernels[n]
    tot = sum(samples.values()) or 1
    print(f"\n{n}: {tot} stall samples; reasons " +
          ", ".join(f"{k} {100 * v / tot:.1f}%" for k, v in reasons.most_common(8)) +
          "; opcodes " + ", ".join(f"{k} {100 * v / tot:.1f}%" for k, v in samples.most_common(8)))
