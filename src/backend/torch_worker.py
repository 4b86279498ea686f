#!/usr/bin/env python3
"""kernelgate's PyTorch worker: an external backend speaking the JSON-lines protocol
documented in src/backend/worker.rs (protocol 1).

Backends: `torch` (eager PyTorch) and `torch-compile` (`--compile`: torch.compile, Inductor's
Triton kernels; compile time reported separately from latency).

Each family maps the harness's named input tensors to the PyTorch op users run today and
returns the outputs in the family's order. Inputs arrive as raw little-endian files made by the
harness from the same seeded data its float64 reference uses; outputs go back as raw files.

Timing is on the device: after the checked outputs are written, each op (eager or compiled) is
captured in a CUDA graph (`batch` calls for short ops, one otherwise) and the graph's replays
are timed with CUDA events, so host dispatch (Python, autograd, Dynamo guards) stays out of
the samples. Where capture fails the op is timed eagerly and the reply's `graph_error` says why.

Device: the worker uses its first visible device (`cuda`); the harness starts one worker per
device it runs cases on, with `CUDA_VISIBLE_DEVICES` naming only that device.
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
    """The SDPA backend PyTorch's dispatcher picks for these inputs (private API; best effort)."""
    try:
        from torch.nn.attention import SDPBackend

        idx = torch._fused_sdp_choice(q, k, v, None, 0.0, causal, scale=None, enable_gqa=gqa)
        return SDPBackend(idx).name.lower()
    except Exception as e:  # the private API moved: say so rather than guess
        return f"unknown ({type(e).__name__})"


EPS = 1e-6
IGNORE_INDEX = -100


def _rows(x, m, n):
    return x.view(m, n)


def _norm_weight_note(x, w):
    return "" if w.dtype == x.dtype else " (fp32 weights: computed in fp32, cast back)"


def fam_rmsnorm(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    x, w = _rows(t["x"], m, n), t["w"]
    if w.dtype == x.dtype:
        return (lambda: [F.rms_norm(x, (n,), w, EPS)]), "F.rms_norm"
    return (lambda: [F.rms_norm(x.float(), (n,), w.float(), EPS).to(x.dtype)]), "F.rms_norm" + _norm_weight_note(x, w)


def fam_rmsnorm_bwd(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    x = _rows(t["x"], m, n).clone().requires_grad_(True)
    w = t["w"].clone().requires_grad_(True)
    dy = _rows(t["dy"], m, n)
    if w.dtype == x.dtype:
        y = F.rms_norm(x, (n,), w, EPS)
    else:
        y = F.rms_norm(x.float(), (n,), w.float(), EPS).to(x.dtype)

    def fn():  # the backward only: the forward graph is built once above
        dx, dw = torch.autograd.grad(y, (x, w), dy, retain_graph=True)
        return [dx, dw]

    return fn, "autograd F.rms_norm backward"


def fam_fused_add_rmsnorm(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    x, res, w = _rows(t["x"], m, n), _rows(t["residual"], m, n), t["w"]

    def fn():  # vLLM semantics, in place: residual += x; x = rmsnorm(residual) * w
        res.add_(x)
        if w.dtype == x.dtype:
            x.copy_(F.rms_norm(res, (n,), w, EPS))
        else:
            x.copy_(F.rms_norm(res.float(), (n,), w.float(), EPS))
        return [x, res]

    return fn, "residual.add_ + F.rms_norm + copy_"


def fam_layernorm(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    x, w, b = _rows(t["x"], m, n), t["w"], t["b"]
    if w.dtype == x.dtype:
        return (lambda: [F.layer_norm(x, (n,), w, b, EPS)]), "F.layer_norm"
    return (lambda: [F.layer_norm(x.float(), (n,), w.float(), b.float(), EPS).to(x.dtype)]), "F.layer_norm" + _norm_weight_note(x, w)


def fam_softmax(t, shape, dtype):
    x = _rows(t["x"], shape["m"], shape["n"])
    return (lambda: [torch.softmax(x, -1)]), "torch.softmax"


def fam_softmax_bwd(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    y, dy = _rows(t["y"], m, n), _rows(t["dy"], m, n)
    return (lambda: [torch._softmax_backward_data(dy, y, -1, y.dtype)]), "aten._softmax_backward_data"


def fam_cross_entropy(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    logits, tg = _rows(t["logits"], m, n), t["targets"].long()

    def fn():  # per-row loss in fp32 (reduction 'none') and the logsumexp
        lf = logits.float()
        return [F.cross_entropy(lf, tg, reduction="none", ignore_index=IGNORE_INDEX), torch.logsumexp(lf, -1)]

    return fn, "F.cross_entropy(fp32, reduction=none) + logsumexp"


def fam_cross_entropy_bwd(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    logits = _rows(t["logits"], m, n).clone().requires_grad_(True)
    tg, dloss = t["targets"].long(), t["dloss"]
    loss = F.cross_entropy(logits, tg, reduction="none", ignore_index=IGNORE_INDEX)

    def fn():  # the backward only
        (g,) = torch.autograd.grad(loss, (logits,), dloss.to(loss.dtype), retain_graph=True)
        return [g]

    return fn, "autograd F.cross_entropy backward"


def fam_mse(t, shape, dtype):
    # The family's loss is one fp32 scalar: F.mse_loss on 16-bit inputs returns a 16-bit
    # scalar (2^-9 relative error), so compute in fp32 as a user wanting that loss would.
    a, b = t["a"], t["b"]
    if a.dtype == torch.float32:
        return (lambda: [F.mse_loss(a, b).reshape(1)]), "F.mse_loss"
    return (lambda: [F.mse_loss(a.float(), b.float()).reshape(1)]), "F.mse_loss(fp32 upcast)"


def fam_gelu(t, shape, dtype):
    x = t["x"]
    return (lambda: [F.gelu(x)]), "F.gelu"


def fam_gelu_tanh(t, shape, dtype):
    x = t["x"]
    return (lambda: [F.gelu(x, approximate="tanh")]), "F.gelu(tanh)"


def fam_silu(t, shape, dtype):
    x = t["x"]
    return (lambda: [F.silu(x)]), "F.silu"


def fam_mha(t, shape, dtype):
    b, h, hkv, sq, sk, d = (shape[k] for k in ("b", "h", "hkv", "sq", "sk", "d"))
    causal = bool(shape["causal"])
    q = t["Q"].view(b, h, sq, d)
    k = t["K"].view(b, hkv, sk, d)
    v = t["V"].view(b, hkv, sk, d)
    gqa = h != hkv
    if causal and sq != sk:
        # kernelgate's causal mask is aligned to the end (FlashAttention); SDPA's is_causal is not.
        from torch.nn.attention.bias import causal_lower_right
        mask = causal_lower_right(sq, sk)
        return (lambda: [F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=gqa)]), "sdpa(causal_lower_right)"
    backend = _sdpa_backend(q, k, v, causal, gqa)
    return (lambda: [F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)]), f"sdpa[{backend}]"


def fam_nsa(t, shape, dtype):
    """Plain PyTorch NSA (selected blocks + sliding window), chunked over tokens."""
    B, T, HQ, H, D, S, BS, W = (shape[k] for k in ("b", "t", "hq", "h", "d", "s", "bs", "w"))
    G = HQ // H
    scale = 1.0 / math.sqrt(D)
    q = t["q"].view(B, T, H, G, D)
    k = t["k"].view(B, T, H, D).permute(0, 2, 1, 3)  # [B, H, T, D]
    v = t["v"].view(B, T, H, D).permute(0, 2, 1, 3)
    g_slc = t["g_slc"].view(B, T, H, G).float()
    g_swa = t["g_swa"].view(B, T, H, G).float()
    bi = t["block_indices"].view(B, T, H, S).long()
    bc = t["block_counts"].view(B, T, H).long()
    chunk = max(1, min(T, (1 << 27) // max(1, B * H * (S * BS + W) * D)))
    dev = q.device
    r_bs = torch.arange(BS, device=dev)
    r_w = torch.arange(W, device=dev)
    slots = torch.arange(S, device=dev)

    def branch(qc, pos, valid):
        # qc [B,C,H,G,D]; pos/valid [B,C,H,L]
        Bc, C, Hh, L = pos.shape
        idx = pos.clamp(min=0).permute(0, 2, 1, 3).reshape(B, H, C * L)  # [B,H,C*L]
        kk = torch.gather(k, 2, idx[..., None].expand(B, H, C * L, D)).view(B, H, C, L, D).permute(0, 2, 1, 3, 4)
        vv = torch.gather(v, 2, idx[..., None].expand(B, H, C * L, D)).view(B, H, C, L, D).permute(0, 2, 1, 3, 4)
        sc = torch.einsum("bchgd,bchld->bchgl", qc.float(), kk.float()) * scale
        sc = sc.masked_fill(~valid[:, :, :, None, :], float("-inf"))
        p = torch.softmax(sc, -1).nan_to_num(0.0)  # a row with no key contributes 0
        return torch.einsum("bchgl,bchld->bchgd", p, vv.float())

    def fn():
        out = torch.empty(B, T, H, G, D, dtype=q.dtype, device=dev)
        for t0 in range(0, T, chunk):
            t1 = min(T, t0 + chunk)
            tt = torch.arange(t0, t1, device=dev)[None, :, None, None]
            idx = bi[:, t0:t1]  # [B,C,H,S]
            pos = (idx[..., None] * BS + r_bs).flatten(-2)  # [B,C,H,S*BS]
            ok = (idx >= 0) & (slots < bc[:, t0:t1, :, None])
            valid = (ok[..., None].expand(*ok.shape, BS).flatten(-2)) & (pos <= tt) & (pos >= 0)
            o = branch(q[:, t0:t1], pos, valid) * g_slc[:, t0:t1, ..., None]
            if W > 0:
                wpos = (tt - W + 1 + r_w).expand(B, t1 - t0, H, W)
                o = o + branch(q[:, t0:t1], wpos, wpos >= 0) * g_swa[:, t0:t1, ..., None]
            out[:, t0:t1] = o.to(q.dtype)
        return [out]

    return fn, f"torch gather+einsum NSA (chunks of {chunk} tokens)"


MEM = ["bf16", "fp16", "fp32"]
FAMILIES = {
    "gemm": (fam_gemm, ["bf16", "fp16", "fp32"]),
    "rmsnorm": (fam_rmsnorm, MEM),
    "rmsnorm_bwd": (fam_rmsnorm_bwd, MEM),
    "fused_add_rmsnorm": (fam_fused_add_rmsnorm, MEM),
    "layernorm": (fam_layernorm, MEM),
    "softmax": (fam_softmax, MEM),
    "softmax_bwd": (fam_softmax_bwd, MEM),
    "cross_entropy": (fam_cross_entropy, MEM),
    "cross_entropy_bwd": (fam_cross_entropy_bwd, MEM),
    "mse": (fam_mse, MEM),
    "gelu": (fam_gelu, MEM),
    "gelu_tanh": (fam_gelu_tanh, MEM),
    "silu": (fam_silu, MEM),
    "mha": (fam_mha, ["bf16", "fp16"]),
    "nsa": (fam_nsa, ["bf16", "fp16"]),
}


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


GRAPH_WARMUP = 3  # eager calls on the capture stream before capture (autograd needs several)


def _capture(g, fn, batch, stream):
    """Captures `batch` calls of fn into CUDA graph g on `stream` (never the legacy default stream).

    Autograd runs each backward op on the stream its forward op ran on, so the families' forward
    graphs (fam_*_bwd) must have been built on this same stream (run() does everything on one
    side stream): a backward whose forward ran on another stream pulls that stream into the
    capture and the capture fails. Raises whatever capture raised; torch.cuda.graph's context
    manager ends the capture on the way out."""
    with torch.cuda.stream(stream):
        for _ in range(GRAPH_WARMUP):
            fn()
    stream.synchronize()
    with torch.cuda.graph(g, stream=stream):
        for _ in range(batch):
            fn()
    torch.cuda.synchronize()


def _capture_error(e):
    """`Type: message` of why capture failed. When the op's own error made ending the capture
    fail too (cudaErrorStreamCaptureInvalidated), the op's error comes first, as the cause."""
    def line(x):
        return (f"{type(x).__name__}: {x}".splitlines() or [""])[0]
    first, seen = e, {id(e)}
    while first.__context__ is not None and id(first.__context__) not in seen:
        first = first.__context__
        seen.add(id(first))
    if first is e:
        return line(e)
    return f"{line(first)} (then {line(e)})"


def _after_failed_capture(g, stream):
    """Leaves `stream` out of capture mode and the device idle after a failed capture; returns a
    note when that did not work cleanly (the eager fallback will then say more)."""
    notes = []
    try:
        with torch.cuda.stream(stream):
            if torch.cuda.is_current_stream_capturing() and g is not None:
                g.capture_end()  # torch.cuda.graph normally did this already
    except Exception as e:
        notes.append(f"ending capture: {type(e).__name__}: {e}")
    try:
        torch.cuda.synchronize()
    except Exception as e:
        notes.append(f"synchronize after capture: {type(e).__name__}: {e}")
    return "; ".join(notes)


HOLD_CYCLES = 40000  # ~20 µs at 2 GHz


def hold(units):
    """Keeps the stream busy (~20 µs per unit, at most ~10 ms) before a sample's start event, so
    the host enqueues the event and the timed work while the GPU is still busy: host launch
    latency never falls between the two events (the harness does the same for its kernels)."""
    torch.cuda._sleep(HOLD_CYCLES * min(units, 500))


def measure(fn, pol):
    """Times fn on the device: a CUDA graph of `batch` calls replayed between CUDA events, so host
    dispatch (Python, autograd, Dynamo guards) stays out of the samples. Ops shorter than
    `min_sample_us` are batched; others are captured one call per graph. If capture fails, falls
    back to eager launches timed with events and returns why in graph_error.

    Returns (samples_ms, batch, graph, flushed, graph_error)."""
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    flush = None
    if pol["flush_l2"]:
        l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
        flush = torch.empty(max(2 * l2, 1 << 20), dtype=torch.int8, device="cuda")

    def region(n, do_flush):
        if do_flush and flush is not None:
            flush.fill_(0x5A)
        hold(1 + n)
        start.record()
        for _ in range(n):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    # Warm-up by time (eager): also estimates one call's time, which decides the batch.
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

    # Always try a graph. Capture needs a non-default stream; run() puts us on one already.
    cur = torch.cuda.current_stream()
    stream = cur
    if cur == torch.cuda.default_stream():
        stream = torch.cuda.Stream()
        stream.wait_stream(cur)
    graph, graph_error, g = None, None, None
    try:
        g = torch.cuda.CUDAGraph()
        _capture(g, fn, batch, stream)
        graph = g
    except Exception as e:
        graph = None
        graph_error = _capture_error(e)
        torch.cuda.set_stream(cur)  # torch.cuda.graph skips restoring it when capture_end raises
        note = _after_failed_capture(g, stream)
        if note:
            graph_error += f" [{note}]"
        graph_error = graph_error[:300]
    g = None
    if stream is not cur:
        cur.wait_stream(stream)

    samples = []
    t0 = time.monotonic()
    while True:
        if graph is not None:
            if flush is not None:
                flush.fill_(0x5A)
            hold(1)
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
    used_graph = graph is not None
    if used_graph:
        torch.cuda.synchronize()
        graph = None  # frees its private memory pool before the next request
    return samples, batch, used_graph, flush is not None, graph_error


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
    # Everything (inputs, the families' autograd forward graphs, the checked run, timing) runs
    # on one side stream: CUDA graphs cannot be captured on the legacy default stream, and
    # autograd runs backward ops on their forward's stream, which must be the capture stream.
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    try:
        with torch.cuda.stream(stream):
            return _run_on_stream(req, kernel, dtype)
    finally:
        try:  # the next request runs on another stream: let this one's work finish first
            torch.cuda.synchronize()
        except Exception:
            pass  # a broken device: the request's own error (if any) says more


def _run_on_stream(req, kernel, dtype):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ins = [load_input(f) for f in req["inputs"]]
    named = {f["name"]: x for f, x in zip(req["inputs"], ins)}
    fn, variant = FAMILIES[kernel][0](named, req["shape"], DTYPES[dtype])
    compile_s = 0.0
    if COMPILE:
        # Static shapes, compiled afresh for each case: Dynamo caches compiled code per function,
        # and every case of a family shares its closure's code, so from the second shape on it
        # would compile a dynamic-shape kernel (symbolic strides), measured ~2x slower than
        # the static one on an H200 (rmsnorm 65536x4096: 540 vs 287 us). Benchmarks by
        # torch.compile's own authors compile per shape.
        torch._dynamo.reset()
        fn = torch.compile(fn, dynamic=False)
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
    # The checked outputs come from the eager (or compiled) call above, never from a graph replay.
    samples, batch, graph, flushed, graph_error = measure(fn, req["timing"])
    return {"ok": True, "samples_ms": samples, "batch": batch, "graph": graph, "flushed": flushed,
            "graph_error": graph_error, "variant": variant, "compile_s": compile_s}


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
