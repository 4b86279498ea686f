#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cu (session 34): thread 0 prefetches the tensor maps of
A, B (and C for the TMA-store entries) at kernel entry, before the mbarrier set-up and before
griddepcontrol.wait, as CUTLASS's kernels do, instead of in the producer after the wait. The maps
are kernel parameters, never written by the previous kernel, so the prefetch may overlap it (PDL)
and the descriptor fetch leaves the first load's critical path.

gemm_prefetch_entry_patch.py FILE. Exit status 1 if a pattern is missing (the file changed)."""
import sys

from patchlib import patch_file

entry_old = """    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {"""
entry_new = """    if (tid == 0) {
        asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmA))
                     : "memory");
        asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmB))
                     : "memory");
        if (TS)
            asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmC))
                         : "memory");
        for (int s = 0; s < STAGES; ++s) {"""
prod_old = """        if (tid == 0) {
            asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmA))
                         : "memory");
            asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmB))
                         : "memory");
            unsigned it = 0;"""
prod_new = """        if (tid == 0) {
            unsigned it = 0;"""
patch_file(sys.argv[1], [(entry_old, entry_new), (prod_old, prod_new)])
