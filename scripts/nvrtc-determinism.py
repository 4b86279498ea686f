#!/usr/bin/env python3
"""Compiles one kernel file with NVRTC the way the harness does (its local *.cuh as in-memory
headers, --gpu-architecture=ARCH -std=c++17 and the CUDA include path) and prints the SHA-256 (12
hex digits) of the PTX and of the cubin. Session 44 used it to find what NVRTC's output depends
on (scripts/nvrtc-determinism.sh). No GPU needed.

Usage: nvrtc-determinism.py FILE [ARCH] (libnvrtc from LD_LIBRARY_PATH or CUDA_HOME/lib64)."""
import ctypes
import glob
import hashlib
import os
import sys


def load_nvrtc():
    for name in ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"]:
        for d in [""] + [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "lib64")]:
            try:
                return ctypes.CDLL(os.path.join(d, name) if d else name)
            except OSError:
                pass
    sys.exit("no libnvrtc found (LD_LIBRARY_PATH or CUDA_HOME/lib64)")


def include_dir():
    for d in [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]:
        if d and os.path.exists(os.path.join(d, "include", "cuda_fp16.h")):
            return os.path.join(d, "include")
    sys.exit("no CUDA headers (cuda_fp16.h) under CUDA_HOME, CUDA_PATH or /usr/local/cuda")


def main():
    path = sys.argv[1]
    arch = sys.argv[2] if len(sys.argv) > 2 else "sm_90a"
    lib = load_nvrtc()
    hdrs = sorted(glob.glob(os.path.join(os.path.dirname(path) or ".", "*.cuh")))
    names = (ctypes.c_char_p * len(hdrs))(*[os.path.basename(h).encode() for h in hdrs])
    texts = (ctypes.c_char_p * len(hdrs))(*[open(h, "rb").read() for h in hdrs])
    prog = ctypes.c_void_p()
    src = open(path, "rb").read()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), src, os.path.basename(path).encode(), len(hdrs),
                              texts, names) != 0:
        sys.exit("nvrtcCreateProgram failed")
    opts = [f"--gpu-architecture={arch}".encode(), b"-std=c++17",
            f"--include-path={include_dir()}".encode()]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    if lib.nvrtcCompileProgram(prog, len(opts), arr) != 0:
        n = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
        log = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetProgramLog(prog, log)
        sys.exit(f"{path}: compile failed\n{log.value.decode()[:4000]}")

    def blob(size_fn, get_fn):
        n = ctypes.c_size_t()
        size_fn(prog, ctypes.byref(n))
        b = ctypes.create_string_buffer(n.value)
        get_fn(prog, b)
        return b.raw

    ptx = blob(lib.nvrtcGetPTXSize, lib.nvrtcGetPTX)
    cubin = blob(lib.nvrtcGetCUBINSize, lib.nvrtcGetCUBIN)
    print(f"ptx {hashlib.sha256(ptx).hexdigest()[:12]} cubin {hashlib.sha256(cubin).hexdigest()[:12]}")


main()
