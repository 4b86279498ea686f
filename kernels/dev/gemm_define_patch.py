#!/usr/bin/env python3
"""Patches a COPY of a kernel file's compile-time switches: every NAME=VALUE argument rewrites
that file's `#ifndef NAME` / `#define NAME <default>` pair to the value given. Session 44's A/B
controls build kernels/gemm_wgmma.cuh without its changes this way (scripts/ab-variants.sh with
PATCH_FILE=gemm_wgmma.cuh, `old:kernels/dev/gemm_define_patch.py+GW_OVL3=0+GW_LASTSTAGE=0`).

gemm_define_patch.py FILE NAME=VALUE... Exit status 1 if a switch is missing (the file changed)."""
import re
import sys

from patchlib import patch_file

path, args = sys.argv[1], sys.argv[2:]
if not args:
    sys.exit("usage: gemm_define_patch.py FILE NAME=VALUE...")
text = open(path).read()
edits = []
for a in args:
    name, _, value = a.partition("=")
    m = re.search(rf"#ifndef {name}\n#define {name} [^\n]*\n", text)
    if not m or not value:
        sys.exit(f"{path}: no `#ifndef {name}` / `#define {name} ...` pair to set to {value!r}")
    edits.append((m.group(0), f"#ifndef {name}\n#define {name} {value}\n"))
patch_file(path, edits)
