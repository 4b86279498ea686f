#!/usr/bin/env python3
"""Why is torch.compile slower than eager for large row norms? (diagnostic, needs a CUDA GPU)

Seen on an H200 (torch 2.11): rmsnorm 65536x4096 bf16 539 us compiled vs 306 us eager,
layernorm 1025 us vs 391 us. For F.rms_norm / F.layer_norm at large shapes this times eager and
several torch.compile variants, each as one call between CUDA events (as the torch-compile
worker used to time them, host dispatch included) and as a CUDA-graph replay (device time
only), with the L2 flushed before every rep. It dumps Inductor's generated code and autotuning
log under $OUT (default /tmp/probe) and prints a table last.

First run (H200, torch 2.11): only the dynamic-shape kernels reproduce those numbers (variants
dynamic=True and after-other-shape: 540 us and 1006 us); static compiles beat eager.

    OUT=/tmp/probe python3 -u scripts/torch_compile_probe.py [rmsnorm,layernorm] [65536x4096,...]
"""
import json
import logging
import os
import sys
import time
import traceback

OUT = os.environ.get("OUT") or "/tmp/probe"
os.makedirs(OUT, exist_ok=True)
OPS = (sys.argv[1] if len(sys.argv) > 1 else "rmsnorm,layernorm").split(",")
SHAPES = [tuple(int(v) for v in s.split("x"))
          for s in (sys.argv[2] if len(sys.argv) > 2 else "65536x4096,32768x8192").split(",")]
REPS, WARM, EPS = 50, 10, 1e-6


def log(*a):
    print(*a, flush=True)


import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch._dynamo  # noqa: E402
import torch._inductor.config as icfg  # noqa: E402

try:  # Inductor hands each generated module's source to this hook (run_and_get_code uses it)
    from torch._inductor.graph import GraphLowering
except Exception as e:  # moved: compile without the dump
    GraphLowering = None
    log(f"no GraphLowering ({e}); generated code will not be dumped")


def run_keep_code(call):
    """call() and the Inductor modules compiled meanwhile (no dynamo reset, unlike run_and_get_code)."""
    codes = []
    if GraphLowering is None:
        return call(), codes
    from unittest import mock
    with mock.patch.object(GraphLowering, "save_output_code", codes.append):
        return call(), codes

for k, v in (("fx_graph_cache", False), ("force_disable_caches", True)):
    try:  # every variant really compiles (honest compile times, code always dumped)
        setattr(icfg, k, v)
    except Exception as e:
        log(f"cannot set inductor {k}: {e}")

# Inductor's autotuner logs the config it picks at DEBUG: keep that in a file.
_h = logging.FileHandler(os.path.join(OUT, "inductor_autotune.log"))
_h.setFormatter(logging.Formatter("%(name)s: %(message)s"))
for name in ("torch._inductor.runtime.triton_heuristics", "torch._inductor.runtime.coordinate_descent_tuner"):
    lg = logging.getLogger(name)
    lg.setLevel(logging.DEBUG)
    lg.addHandler(_h)

dev = torch.cuda.current_device()
props = torch.cuda.get_device_properties(dev)
log(f"torch {torch.__version__}, device {props.name}, L2 {props.L2_cache_size >> 20} MiB, out {OUT}")
try:
    import triton
    log(f"triton {triton.__version__}")
except Exception as e:
    log(f"no triton: {e}")
FLUSH = torch.empty(2 * props.L2_cache_size, dtype=torch.int8, device="cuda")
START, END = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def median(xs):
    s = sorted(xs)
    return s[len(s) // 2] if len(s) % 2 else 0.5 * (s[len(s) // 2 - 1] + s[len(s) // 2])


def time_reps(launch):
    """Median us of `launch` between CUDA events, L2 flushed before each rep."""
    ts = []
    for _ in range(REPS):
        FLUSH.zero_()
        START.record()
        launch()
        END.record()
        END.synchronize()
        ts.append(START.elapsed_time(END) * 1e3)
    return median(ts)


def time_call(call):
    for _ in range(WARM):
        call()
    torch.cuda.synchronize()
    us = time_reps(call)
    t0 = time.perf_counter()  # host cost per call: back-to-back launches, no sync in between
    for _ in range(20):
        call()
    host = (time.perf_counter() - t0) / 20 * 1e6
    torch.cuda.synchronize()
    return us, host


def time_graph(call):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        call()
    for _ in range(WARM):
        g.replay()
    torch.cuda.synchronize()
    us = time_reps(g.replay)
    del g
    torch.cuda.synchronize()
    return us


def worker_like(numel, seed):
    """A 1-D CUDA tensor made as the worker makes inputs: frombuffer(raw bytes) -> .to("cuda")."""
    g = torch.Generator().manual_seed(seed)
    raw = bytearray(torch.randn(numel, generator=g).to(torch.bfloat16).view(torch.int16).numpy().tobytes())
    return torch.frombuffer(raw, dtype=torch.bfloat16).to("cuda")


def kernels(call):
    """The GPU kernels one call launches, with their mean device time (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            FLUSH.zero_()
            call()
        torch.cuda.synchronize()
    out = []
    for ev in prof.key_averages():
        total = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0)
        if total > 0 and "fill" not in ev.key.lower() and "zero" not in ev.key.lower():
            out.append(f"{ev.key[:70]} x{ev.count // 5} {total / ev.count:.1f}us")
    return "; ".join(out)


def make(op, m, n):
    x = worker_like(m * n, 1).view(m, n)  # as the worker's families do
    w = worker_like(n, 2)
    if op == "rmsnorm":
        def f_args(x, w):
            return F.rms_norm(x, (n,), w, EPS)
        args = (x, w)
    else:
        b = worker_like(n, 3)

        def f_args(x, w, b):
            return F.layer_norm(x, (n,), w, b, EPS)
        args = (x, w, b)

    def closure():  # what the worker compiles: a zero-argument closure over the tensors
        return f_args(*args)
    nbytes = 2 * x.numel() * x.element_size() + sum(a.numel() * a.element_size() for a in args[1:])
    return closure, f_args, args, nbytes


# (tag, compile the closure?, torch.compile kwargs, inductor config patch, dump code?, pre?)
# pre: first compile and run the same closure code at (m/2, n/2), as a long-lived worker that
# has already run the family at another shape (Dynamo caches per code object: the second shape
# recompiles with automatic dynamic shapes unless dynamic=False).
VARIANTS = [
    ("compile-closure", True, {}, {}, True, False),
    ("compile-args", False, {}, {}, True, False),
    ("compile-closure-dynamic=False", True, {"dynamic": False}, {}, False, False),
    ("compile-closure-dynamic=True", True, {"dynamic": True}, {}, True, False),
    ("compile-closure-after-other-shape", True, {}, {}, True, True),
    ("compile-closure-dyn=False-after-other", True, {"dynamic": False}, {}, False, True),
    ("compile-closure-max-autotune-no-cg", True, {"mode": "max-autotune-no-cudagraphs"}, {}, True, False),
    ("compile-closure-coord-descent", True, {}, {"coordinate_descent_tuning": True}, True, False),
    ("compile-closure-multi-kernel", True, {}, {"triton.multi_kernel": 1}, True, False),
    ("compile-closure-no-persistent", True, {}, {"triton.persistent_reductions": False}, False, False),
    ("compile-closure-cooperative", True, {}, {"triton.cooperative_reductions": True}, False, False),
]

ROWS = []


def record(op, m, n, tag, nbytes, call_us=None, host_us=None, graph_us=None, compile_s=None, diff=None,
           err="", kern=""):
    gbs = (lambda us: nbytes / (us * 1e3) if us else None)
    r = {"op": op, "shape": f"{m}x{n}", "variant": tag, "call_us": call_us, "call_GBs": gbs(call_us),
         "graph_us": graph_us, "graph_GBs": gbs(graph_us), "host_us": host_us, "compile_s": compile_s,
         "maxdiff": diff, "error": err, "kernels": kern}
    ROWS.append(r)
    log("  " + json.dumps(r))
    with open(os.path.join(OUT, "results.json"), "w") as fh:
        json.dump(ROWS, fh, indent=1)


def err_text(e):
    return (f"{type(e).__name__}: {e}".splitlines() or [""])[0][:200]


def try_kernels(call):
    try:
        return kernels(call)
    except Exception as e:
        return "profiler: " + err_text(e)


def probe(op, m, n):
    log(f"== {op} {m}x{n} bf16")
    closure, f_args, args, nbytes = make(op, m, n)
    ref = closure()
    try:
        us, host = time_call(closure)
        gus = None
        try:
            gus = time_graph(closure)
        except Exception as e:
            log(f"  eager graph failed: {err_text(e)}")
        record(op, m, n, "eager", nbytes, us, host, gus, kern=try_kernels(closure))
    except Exception as e:
        record(op, m, n, "eager", nbytes, err=err_text(e))
        traceback.print_exc()
    for tag, is_closure, kw, knobs, dump, pre in VARIANTS:
        cs = call = None
        try:
            torch._dynamo.reset()
            with icfg.patch(knobs):
                if pre:  # same code object, other shape: the big shape below is a recompile
                    torch.compile(make(op, m // 2, n // 2)[0], **kw)()
                    torch.cuda.synchronize()
                target = closure if is_closure else f_args
                cf = torch.compile(target, **kw)
                call = cf if is_closure else (lambda cf=cf: cf(*args))
                t0 = time.monotonic()
                y, codes = run_keep_code(call)
                if dump:
                    with open(os.path.join(OUT, f"{op}_{m}x{n}_{tag}.py"), "w") as fh:
                        fh.write(f"# {len(codes)} generated module(s)\n" + "\n\n# ---- next module ----\n\n".join(codes))
                torch.cuda.synchronize()
                cs = time.monotonic() - t0
                diff = (y.float() - ref.float()).abs().max().item()
                us, host = time_call(call)
                kern = try_kernels(call)
        except Exception as e:
            record(op, m, n, tag, nbytes, compile_s=cs, err=err_text(e))
            traceback.print_exc()
            continue
        gus, gerr = None, ""
        try:
            gus = time_graph(call)
        except Exception as e:
            gerr = "graph: " + err_text(e)
        record(op, m, n, tag, nbytes, us, host, gus, cs, diff, gerr, kern)


def fmt(v, f):
    return "-".rjust(int(f.split(".")[0])) if v is None else format(v, f)


def main():
    t0 = time.monotonic()
    for op in OPS:
        for m, n in SHAPES:
            try:
                probe(op, m, n)
            except Exception as e:  # e.g. out of memory: go on with the next shape
                log(f"{op} {m}x{n}: {err_text(e)}")
                traceback.print_exc()
            torch._dynamo.reset()
            torch.cuda.empty_cache()
    log(f"\ndone in {time.monotonic() - t0:.0f} s; files in {OUT}: {sorted(os.listdir(OUT))}")
    log(f"\n{'op':<10}{'shape':<12}{'variant':<40}{'call_us':>9}{'GB/s':>7}{'graph_us':>10}{'GB/s':>7}"
        f"{'host_us':>9}{'comp_s':>8}{'maxdiff':>9}  error")
    for r in ROWS:
        log(f"{r['op']:<10}{r['shape']:<12}{r['variant']:<40}{fmt(r['call_us'], '9.1f')}{fmt(r['call_GBs'], '7.0f')}"
            f"{fmt(r['graph_us'], '10.1f')}{fmt(r['graph_GBs'], '7.0f')}{fmt(r['host_us'], '9.1f')}"
            f"{fmt(r['compile_s'], '8.1f')}{fmt(r['maxdiff'], '9.3g')}  {r['error']}")


if __name__ == "__main__":
    main()
