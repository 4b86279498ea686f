#!/usr/bin/env python3
"""kernelgate's PyTorch worker: an external backend speaking the JSON-lines protocol
documented in src/backend/worker.rs (protocol 1).

Backends: `torch` (eager PyTorch) and `torch-compile` (`--compile`: torch.compile, Inductor's
Triton kernels; compile time reported separately from latency).

Each family maps the harness's named input tensors to the PyTorch op users run today and
returns the outputs in the family's order. Inputs arrive as raw little-endian files made by the
harness from the same seeded data its float64 reference uses; outputs go back as raw files.
"""
import json
import math
import struct
import sys
import time

DTYPES = {}


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def fail(msg):
    reply({"ok": False, "error": msg})


try:
    import torch
    import torch.nn.functional as F
except Exception as e:  # no torch: the handshake says why and the cases are ignored
    torch = None
    IMPORT_ERROR = f"cannot import torch with {sys.executable}: {e}"
else:
    IMPORT_ERROR = None
    DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}

COMPILE = "--compile" in sys.argv


# ---- families: each returns (fn, variant); fn() returns the list of outputs -----------------

def fam_gemm(t, shape, dtype):
    m, n, k = shape["m"], shape["n"], shape["k"]
    a = t["A"].view(m, k)
    b = t["B"].view(k, n)

    def fn():
        return [torch.matmul(a, b)]

    return fn, "torch.matmul"


def _sdpa_backend(q, k, v, causal, gqa):
    """Which SDPA backend PyTorch picks for these inputs (first that accepts them)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    for be in (SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH):
        try:
            with sdpa_kernel([be]):
                F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
            return be.name.lower()
        except Exception:
            continue
    return "unknown"


FAMILIES = {"gemm": (fam_gemm, ["bf16", "fp16", "fp32"])}


# ---- timing: the harness's policy ------------------------------------------------------------

def median_noise(xs):
    s = sorted(xs)
    n = len(s)
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    dev = sorted(abs(x - med) for x in s)
    mad = dev[n // 2] if n % 2 else 0.5 * (dev[n // 2 - 1] + dev[n // 2])
    if med <= 0:
        return float("inf")
    return 1.96 * 1.2533 * 1.4826 * mad / math.sqrt(n) / med


def measure(fn, pol):
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    flush = None
    if pol["flush_l2"]:
        l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
        flush = torch.empty(max(2 * l2, 1 << 20), dtype=torch.int8, device="cuda")

    def region(n, do_flush):
        if do_flush and flush is not None:
            flush.fill_(0x5A)
        start.record()
        for _ in range(n):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    spent, launches, n, single = 0.0, 0, 1, float("inf")
    while spent < pol["warmup_ms"] or launches < 3:
        t = region(n, False)
        single = min(single, t / n)
        spent += t
        launches += n
        if spent < pol["warmup_ms"] / 4:
            n = min(n * 2, 4096)
    batch = 1
    if single * 1e3 < pol["min_sample_us"]:
        batch = max(2, min(pol["max_batch"], math.ceil(pol["min_sample_us"] / max(single * 1e3, 1e-3))))
    graph = None
    if batch > 1:
        try:
            g = torch.cuda.CUDAGraph()
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                fn()
            torch.cuda.current_stream().wait_stream(s)
            with torch.cuda.graph(g):
                for _ in range(batch):
                    fn()
            graph = g
        except Exception:
            graph = None
    samples = []
    t0 = time.monotonic()
    while True:
        if graph is not None:
            if flush is not None:
                flush.fill_(0x5A)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            t = start.elapsed_time(end)
        else:
            t = region(batch, True)
        samples.append(t / batch)
        n = len(samples)
        if n >= pol["max_samples"]:
            break
        if n >= pol["min_samples"]:
            if (time.monotonic() - t0) * 1e3 > pol["max_time_ms"]:
                break
            if n % 5 == 0 and median_noise(samples) < pol["target_noise"]:
                break
    return samples, batch, graph is not None, flush is not None


# ---- protocol --------------------------------------------------------------------------------

def load_input(f):
    with open(f["path"], "rb") as fh:
        data = bytearray(fh.read())
    dt = torch.int32 if f.get("int32") else DTYPES[f["dtype"]]
    x = torch.frombuffer(data, dtype=dt) if len(data) else torch.empty(0, dtype=dt)
    if x.numel() != f["len"]:
        raise ValueError(f"input {f['name']}: {x.numel()} elements in {f['path']}, expected {f['len']}")
    return x.to("cuda")


def write_output(f, x):
    want = DTYPES[f["dtype"]]
    x = x.detach().reshape(-1)
    if x.dtype != want:
        x = x.to(want)
    if x.numel() != f["len"]:
        raise ValueError(f"output {f['name']}: op produced {x.numel()} elements, expected {f['len']}")
    x = x.contiguous().cpu()
    raw = x.view(torch.int16 if x.element_size() == 2 else torch.int32).numpy().tobytes()
    with open(f["path"], "wb") as fh:
        fh.write(raw)


def run(req):
    kernel, dtype = req["kernel"], req["dtype"]
    if kernel not in FAMILIES or dtype not in FAMILIES[kernel][1]:
        raise ValueError(f"torch worker does not implement {kernel} {dtype}")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ins = [load_input(f) for f in req["inputs"]]
    named = {f["name"]: x for f, x in zip(req["inputs"], ins)}
    fn, variant = FAMILIES[kernel][0](named, req["shape"], DTYPES[dtype])
    compile_s = 0.0
    if COMPILE:
        fn = torch.compile(fn)
        variant = f"torch.compile({variant})"
        t0 = time.monotonic()
        fn()
        torch.cuda.synchronize()
        compile_s = time.monotonic() - t0
    outs = fn()
    torch.cuda.synchronize()
    for k, f in enumerate(req["outputs"]):
        if f.get("alias") is not None:
            write_output(f, ins[f["alias"]])
        else:
            write_output(f, outs[k])
    samples, batch, graph, flushed = measure(fn, req["timing"])
    return {"ok": True, "samples_ms": samples, "batch": batch, "graph": graph, "flushed": flushed,
            "variant": variant, "compile_s": compile_s}


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
        except Exception as e:
            fail(f"request is not JSON: {e}")
            continue
        op = req.get("op")
        if op == "bye":
            return
        if op == "hello":
            if IMPORT_ERROR:
                fail(IMPORT_ERROR)
                return
            if not torch.cuda.is_available():
                fail("torch sees no CUDA device")
                return
            reply({"ok": True, "name": "torch-compile" if COMPILE else "torch", "version": torch.__version__,
                   "device": torch.cuda.get_device_name(0),
                   "families": {k: v[1] for k, v in FAMILIES.items()}})
            continue
        if op == "run":
            try:
                reply(run(req))
            except Exception as e:
                fail(f"{type(e).__name__}: {e}")
            continue
        fail(f"unknown op {op!r}")


if __name__ == "__main__":
    main()
