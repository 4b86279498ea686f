#!/usr/bin/env python3
"""The nsa suite's G = 1 cases from `kernelgate run` / test-binary results: nominal TFLOP/s now
(and, with --before, in an earlier results file of the same suite), the kernel that ran, and how
many reach the 60 TFLOP/s bar; then the G > 1 cases' times. Usage:
nsa-table.py RESULTS.json[.gz] [--before EARLIER.json[.gz]]"""
import gzip
import json
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return {r["case"]: r for r in json.load(f)["results"]
                if r["kernel"] == "nsa" and r["backend"] == "cuda" and r.get("latency_ms")}


def kernel(r):
    return r["variant"].split(" ")[0]


args = sys.argv[1:]
before = {}
if "--before" in args:
    i = args.index("--before")
    before = load(args[i + 1])
    del args[i:i + 2]
now = load(args[0])
g1 = sorted((r for r in now.values()
             if r["problem_size"]["hq"] == r["problem_size"]["h"]), key=lambda r: r["tflops"])


def header(cols, aligns, before_cols, before_aligns):
    """A Markdown table header, with the earlier run's columns when there is one."""
    print("| " + " | ".join(cols + (before_cols if before else [])) + " |")
    print("| " + " | ".join(aligns + (before_aligns if before else [])) + " |")


header(["case (G = 1)", "µs", "TFLOP/s", "kernel"], ["---", "---:", "---:", "---"],
       ["before µs", "TFLOP/s", "kernel"], ["---:", "---:", "---"])
for r in g1:
    line = f"| {r['case'].split('::')[-1]} | {r['latency_ms'] * 1e3:.1f} | {r['tflops']:.1f} | `{kernel(r)}` |"
    b = before.get(r["case"])
    if before:
        line += (f" {b['latency_ms'] * 1e3:.1f} | {b['tflops']:.1f} | `{kernel(b)}` |" if b else " – | – | – |")
    print(line)
n = sum(r["tflops"] >= 60 for r in g1)
print(f"\nG = 1 at >= 60 nominal TFLOP/s: {n} of {len(g1)}", end="")
if before:
    nb = sum(before[r["case"]]["tflops"] >= 60 for r in g1 if r["case"] in before)
    print(f" (before: {nb})")
else:
    print()
rest = sorted((r for r in now.values() if r["problem_size"]["hq"] != r["problem_size"]["h"]),
              key=lambda r: r["case"])
print()
header(["case (G > 1)", "µs", "kernel"], ["---", "---:", "---"], ["before µs", "now / before"], ["---:", "---:"])
for r in rest:
    line = f"| {r['case'].split('::')[-1]} | {r['latency_ms'] * 1e3:.1f} | `{kernel(r)}` |"
    b = before.get(r["case"])
    if before:
        line += f" {b['latency_ms'] * 1e3:.1f} | {r['latency_ms'] / b['latency_ms']:.3f} |" if b else " – | – |"
    print(line)
