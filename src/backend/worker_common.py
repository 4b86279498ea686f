"""Shared machinery of kernelgate's built-in Python workers (torch, torch-compile, fla, liger,
quack, flash-attn): the JSON-lines protocol of src/backend/worker.rs (protocol 1), raw input
and output files, and the device timing policy. Each worker file defines only its families.

A worker module calls `serve(Worker(...))`. Its families map the harness's named input tensors
to the library call users run and return the outputs in the family's order. Inputs arrive as
raw little-endian files made by the harness from the same seeded data its float64 reference
uses; outputs go back as raw files; the harness applies its own checks.

Timing is on the device: after the checked outputs are written (from a plain first call), the
op is captured in a CUDA graph (`batch` calls for short ops, one otherwise) on a side stream
and the graph's replays are timed with CUDA events, each after a ~20 µs hold kernel (so host
launch latency never falls between the events) and an L2 flush; host dispatch (Python,
autograd, framework overhead) stays out of the samples. Where capture fails the op is timed
eagerly and the reply's `graph_error` says why. A final wall-clock check fails the case when
the events plainly did not cover the op's work (e.g. a library launching on a stream other
than the current one).

Declining: a family (or its `check`) raises `Unsupported(reason)` for a case outside what the
library implements with the family's exact semantics; the reply is
`{"ok": false, "unsupported": true, "error": reason}` and the harness reports the case ignored
with that reason. A worker whose library is missing fails the handshake with the reason and an
install hint, so all its cases are ignored.
"""
import json
import math
import os
import sys
import time

# The protocol owns file descriptor 1. Anything else that writes to stdout (a library's
# print(), or C code writing to fd 1) goes to stderr instead, so it cannot corrupt a reply.
_PROTO = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)
sys.stdout = sys.stderr

DTYPES = {}

try:
    import torch
    import torch.nn.functional as F
except Exception as e:  # no torch: the handshake says why and the cases are ignored
    torch = None
    F = None
    TORCH_ERROR = f"cannot import torch with {sys.executable}: {type(e).__name__}: {e}"
else:
    TORCH_ERROR = None
    DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}

# The families' constants (src/family/norms_ref.rs).
EPS = 1e-6
IGNORE_INDEX = -100
MEM = ["bf16", "fp16", "fp32"]


def reply(obj):
    _PROTO.write(json.dumps(obj) + "\n")
    _PROTO.flush()


def fail(msg):
    reply({"ok": False, "error": msg})


class Unsupported(Exception):
    """The case is outside what this backend implements with the family's semantics: the
    harness reports it ignored with this reason."""


class Unavailable(Exception):
    """The backend cannot run here (library, torch or GPU missing): the handshake fails with
    this reason and every case of the backend is ignored."""


class Family:
    """One family of a worker: `build(tensors, shape, dtype)` returns `(fn, variant)` or
    `(fn, variant, to_outputs)`; `fn()` returns the outputs (a list, or tensors in a layout
    `to_outputs(outs)` maps to the family's). `check(shape, dtype)` returns a reason to
    decline the case before any input is loaded, or None."""

    def __init__(self, build, dtypes, check=None):
        self.build, self.dtypes, self.check = build, list(dtypes), check


def families(table):
    """{name: Family} from {name: Family | (build, dtypes) | (build, dtypes, check)}."""
    return {k: v if isinstance(v, Family) else Family(*v) for k, v in table.items()}


def rows(x, m, n):
    return x.view(m, n)


def version_of(dist, default="unknown"):
    """The installed version of distribution `dist` (pip name), or `default`."""
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:
        return default


def process_pth_files():
    """Runs the `.pth` files of the PYTHONPATH entries, as site-packages would: wheels
    installed with `pip install --target DIR` and used through PYTHONPATH=DIR otherwise miss
    them (nvidia-cutlass-dsl puts its `cutlass` package on sys.path from one)."""
    import site
    for d in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        try:
            if d and any(f.endswith(".pth") for f in os.listdir(d)):
                site.addsitedir(d)
        except OSError:
            pass


def require_torch_cuda(needs):
    """Raises Unavailable (naming what the backend needs, e.g. "liger-kernel (pip install
    liger-kernel)") when torch or its CUDA device is missing."""
    if TORCH_ERROR:
        raise Unavailable(f"needs torch with CUDA and {needs}: {TORCH_ERROR}")
    if not torch.cuda.is_available():
        raise Unavailable(f"needs a CUDA device for torch (and {needs}): torch sees none")


def import_error(needs, e):
    """The Unavailable for a library that failed to import."""
    return Unavailable(f"needs {needs}: cannot import it with {sys.executable}: {type(e).__name__}: {e}")


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


CYCLES_PER_US = 2000  # torch.cuda._sleep spins clock cycles: ~2 GHz


HOST_MARGIN = 3.0  # the hold is at least this many times the host's enqueue of a sample
MAX_HOLD_US = 2000.0
DUTY_MIN_SAMPLE_US = 100.0  # the harness's timing::DUTY_MIN_SAMPLE_US
MAX_DUTY_HOLD_US = 20000.0  # the harness's timing::MAX_DUTY_HOLD_US


def duty_hold_us(ratio, sample_us):
    """The harness's timing::duty_hold_us: the duty-cycle floor of a sample's whole hold (µs),
    `ratio` x `sample_us` for samples of at least DUTY_MIN_SAMPLE_US under a ratio above 0, else
    None: a long, power-bound kernel then idles as long as it runs whatever the backend's host
    enqueue time, so every backend's long samples run at the same duty cycle."""
    if ratio > 0 and sample_us >= DUTY_MIN_SAMPLE_US:
        return min(ratio * sample_us, MAX_DUTY_HOLD_US)
    return None


def hold_for(unit_us, units, slowest_us):
    """The per-unit hold for a sample held by `units` units (1 for a graph replay, 1 + batch for
    eager calls): the total becomes at least HOST_MARGIN x the slowest enqueue seen in warm-up,
    at most MAX_HOLD_US in all (or the request's own total when that is longer)."""
    total = unit_us * units
    cap = max(MAX_HOLD_US, total)
    return min(max(total, HOST_MARGIN * slowest_us), cap) / units


def raised_hold(unit_us, units, cap_total):
    """After a late sample: the per-unit hold with the total doubled, or None when the total is
    at `cap_total` already (the sample is then kept)."""
    total = unit_us * units
    if total >= cap_total:
        return None
    return min(2 * total, cap_total) / units


def hold(units, unit_us):
    """Keeps the stream busy (`unit_us` per unit, the request's `hold_us`; at most 500 units)
    before a sample's start event, so the host enqueues the event and the timed work while the
    GPU is still busy: host launch latency never falls between the two events (the harness does
    the same for its kernels)."""
    torch.cuda._sleep(int(CYCLES_PER_US * unit_us * min(units, 500)))


# The wall-clock check: a sample's event time must not be far below the wall time of the same
# work done with a synchronize on each side, less what the host may add to that wall time.
WALL_CHECK_MIN_MS = 0.5
HOST_SLACK_GRAPH_MS = 0.05
HOST_SLACK_EAGER_MS = 0.3  # per eager call (Python, library dispatch, host syncs)


def _wall_ms(work):
    best = float("inf")
    for _ in range(3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        work()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) * 1e3)
    return best


def batch_for(single_ms, forced, min_sample_us, max_batch):
    """Calls per sample: `forced` when the harness pins it (the stored baseline's batch, clamped
    to 1..max_batch), else 1 for ops of at least min_sample_us and enough calls to fill
    min_sample_us (at least 2) for shorter ones; the same rule as the harness's batch_for."""
    if forced is not None:
        return max(1, min(max(1, max_batch), int(forced)))
    if single_ms * 1e3 < min_sample_us:
        return max(2, min(max(2, max_batch), math.ceil(min_sample_us / max(single_ms * 1e3, 1e-3))))
    return 1


def flush_mode(pol):
    """The request's L2 flush mode: "read" or "write" (absent: "write", the protocol's first
    meaning of flush_l2)."""
    mode = pol.get("l2_flush", "write")
    if mode not in ("read", "write"):
        raise ValueError(f"timing.l2_flush must be 'read' or 'write', not {mode!r}")
    return mode


def flush_l2(buf, mode):
    """Empties the L2 before a sample. "read": a reduction reads the whole buffer (twice the L2),
    so the L2 is left cold and clean and the previous sample's dirty lines are written back here,
    not in the timed window (as the harness's kg_l2_sweep). "write": a fill, which leaves the L2
    full of dirty lines that the timed op writes back."""
    if mode == "read":
        buf.max()
    else:
        buf.fill_(0x5A5A5A5A)


def measure(fn, pol):
    """Times fn on the device: a CUDA graph of `batch` calls replayed between CUDA events, so host
    dispatch (Python, autograd, Dynamo guards) stays out of the samples. Ops shorter than
    `min_sample_us` are batched; others are captured one call per graph. If capture fails, falls
    back to eager launches timed with events and returns why in graph_error.

    Returns (samples_ms, batch, graph, flushed, graph_error, timing), timing holding the final
    hold_us, the median host enqueue time of a sample (µs) and the count of late samples."""
    hold_us = float(pol.get("hold_us", 20.0))
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    flush = None
    mode = flush_mode(pol)
    if pol["flush_l2"]:
        l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
        flush = torch.full((max(2 * l2, 1 << 20) // 8,), 0x5A5A5A5A, dtype=torch.int64, device="cuda")

    def region(n, do_flush, replay=None):
        """One timed window: n eager calls, or one replay of a captured graph; returns the event
        time (ms) and the host's enqueue time after the hold (µs)."""
        if do_flush and flush is not None:
            flush_l2(flush, mode)
        hold(1 if replay else 1 + n, hold_us)
        t_host = time.perf_counter()
        start.record()
        if replay:
            replay()
        else:
            for _ in range(n):
                fn()
        end.record()
        enq = (time.perf_counter() - t_host) * 1e6
        end.synchronize()
        return start.elapsed_time(end), enq

    # Warm-up by time (eager): also estimates one call's time, which decides the batch.
    spent, launches, n, single = 0.0, 0, 1, float("inf")
    while spent < pol["warmup_ms"] or launches < 3:
        t = region(n, False)[0]
        single = min(single, t / n)
        spent += t
        launches += n
        if spent < pol["warmup_ms"] / 4:
            n = min(n * 2, 4096)
    batch = batch_for(single, pol.get("batch"), pol["min_sample_us"], pol["max_batch"])

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

    # How long does this host take to enqueue one sample? The hold must outlast it (a slow host
    # would otherwise let the GPU idle inside the timed window): HOST_MARGIN times the slowest
    # of a few trials; a sample whose enqueue still outlasts the hold is dropped and the hold
    # doubled (up to MAX_HOLD_US), as the harness does for its own kernels.
    def submit(do_flush):
        return region(batch, do_flush, graph.replay if graph is not None else None)

    units = 1 if graph is not None else 1 + batch
    slowest = max(submit(False)[1] for _ in range(5))
    cap_total = max(MAX_HOLD_US, hold_us * units)
    hold_us = hold_for(hold_us, units, slowest)
    ratio = float(pol.get("duty_hold", 0.0) or 0.0)
    floor = duty_hold_us(ratio, single * 1e3 * batch)
    duty = None if floor is None else ratio
    if floor is not None:
        hold_us = max(hold_us, floor / units)
        cap_total = max(cap_total, hold_us * units)
    # Soak: samples as they will be timed, discarded, until the GPU's power state has settled.
    soak_s = float(pol.get("soak_ms", 0.0) or 0.0) / 1e3
    t_soak = time.monotonic()
    while time.monotonic() - t_soak < soak_s:
        submit(True)
    samples, enqueue, late = [], [], 0
    t0 = time.monotonic()
    while True:
        t, enq = submit(True)
        if enq > hold_us * units:
            raised = raised_hold(hold_us, units, cap_total)
            if raised is not None:
                late += 1
                hold_us = raised
                continue
        enqueue.append(enq)
        samples.append(t / batch)
        n = len(samples)
        if n >= pol["max_samples"]:
            break
        if n >= pol["min_samples"]:
            if (time.monotonic() - t0) * 1e3 > pol["max_time_ms"]:
                break
            if n % 5 == 0 and median_noise(samples) < pol["target_noise"]:
                break

    # Did the events cover the work? Compare one sample's event time with the wall time of the
    # same work between two synchronizes (warm L2, so the wall time is if anything smaller).
    event_ms = sorted(samples)[len(samples) // 2] * batch
    if graph is not None:
        wall, slack = _wall_ms(graph.replay), HOST_SLACK_GRAPH_MS
    else:
        wall, slack = _wall_ms(lambda: [fn() for _ in range(batch)]), HOST_SLACK_EAGER_MS * batch
    if wall >= WALL_CHECK_MIN_MS and 2 * event_ms < wall - slack:
        raise RuntimeError(
            f"timing events did not cover the op's work: {event_ms:.3f} ms between the events vs "
            f"{wall:.3f} ms wall time for the same {'graph replay' if graph is not None else 'calls'} "
            f"(batch {batch}); the library probably launches on a stream other than torch's current one")

    used_graph = graph is not None
    if used_graph:
        torch.cuda.synchronize()
        graph = None  # frees its private memory pool before the next request
    timing = {"hold_us": hold_us * units, "host_enqueue_us": sorted(enqueue)[len(enqueue) // 2],
              "late_samples": late}
    if duty is not None:
        timing["duty_hold"] = duty
    return samples, batch, used_graph, flush is not None, graph_error, timing


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


class Worker:
    """A worker: its backend `name`, `hello()` returning its version string (raising
    Unavailable when it cannot run here), its families, and how it prepares the op.

    `compile(fn, variant)` (optional) returns (fn, variant, compile_s) before the checked call
    (torch-compile). `first_call_is_compile`: report the checked first call's wall time as
    `compile_s` (libraries that JIT-compile or autotune on the first call: Triton, CuTe DSL).
    The checked outputs always come from the first call of the op that is timed afterwards,
    so ops that update an input in place are checked on the original inputs."""

    def __init__(self, name, hello, table, compile=None, first_call_is_compile=False):
        self.name, self.hello = name, hello
        self.families = families(table)
        self.compile = compile
        self.first_call_is_compile = first_call_is_compile


def run(w, req):
    kernel, dtype = req["kernel"], req["dtype"]
    fam = w.families.get(kernel)
    if fam is None or dtype not in fam.dtypes:
        raise Unsupported(f"{w.name} does not implement {kernel} {dtype}")
    if fam.check is not None:
        why = fam.check(req["shape"], dtype)
        if why:
            raise Unsupported(why)
    # Everything (inputs, the families' autograd forward graphs, the checked run, timing) runs
    # on one side stream: CUDA graphs cannot be captured on the legacy default stream, and
    # autograd runs backward ops on their forward's stream, which must be the capture stream.
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    try:
        with torch.cuda.stream(stream):
            return _run_on_stream(w, fam, req, dtype)
    finally:
        try:  # the next request runs on another stream: let this one's work finish first
            torch.cuda.synchronize()
        except Exception:
            pass  # a broken device: the request's own error (if any) says more


def _run_on_stream(w, fam, req, dtype):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ins = [load_input(f) for f in req["inputs"]]
    named = {f["name"]: x for f, x in zip(req["inputs"], ins)}
    built = fam.build(named, req["shape"], DTYPES[dtype])
    fn, variant = built[0], built[1]
    to_outputs = built[2] if len(built) > 2 else None
    compile_s = 0.0
    if w.compile is not None:
        fn, variant, compile_s = w.compile(fn, variant)
        # The compiling call ran the op: an in-place op (an output aliasing an input, e.g.
        # fused_add_rmsnorm) has updated its inputs, so restore them before the checked call.
        if any(f.get("alias") is not None for f in req["outputs"]):
            with torch.no_grad():
                for x, f in zip(ins, req["inputs"]):
                    x.copy_(load_input(f))
    t0 = time.monotonic()
    outs = fn()
    torch.cuda.synchronize()
    if w.first_call_is_compile:
        compile_s = time.monotonic() - t0
    if to_outputs is not None:
        outs = to_outputs(outs)
    for k, f in enumerate(req["outputs"]):
        x = outs[k] if k < len(outs) else None
        if x is None and f.get("alias") is not None:
            x = ins[f["alias"]]  # an in-place op: the output is its input, updated
        if x is None:
            raise ValueError(f"the op returned no tensor for output {f['name']}")
        write_output(f, x)
    # The checked outputs come from the plain first call above, never from a graph replay.
    samples, batch, graph, flushed, graph_error, timing = measure(fn, req["timing"])
    flushed_how = {"l2_flush": flush_mode(req["timing"])} if flushed else {}
    return {"ok": True, "samples_ms": samples, "batch": batch, "graph": graph, "flushed": flushed,
            **flushed_how, "graph_error": graph_error, "variant": variant, "compile_s": compile_s, **timing}


def serve(w):
    """Answers requests on stdin until `bye` or end of input."""
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
            try:
                version = w.hello()
            except Unavailable as e:
                fail(f"{w.name} {e}")
                return
            except Exception as e:
                fail(f"{w.name} cannot start: {type(e).__name__}: {e}")
                return
            reply({"ok": True, "name": w.name, "version": version,
                   "device": torch.cuda.get_device_name(0),
                   "families": {k: f.dtypes for k, f in w.families.items()}})
            continue
        if op == "run":
            try:
                reply(run(w, req))
            except Unsupported as e:
                reply({"ok": False, "unsupported": True, "error": str(e)})
            except Exception as e:
                fail(f"{type(e).__name__}: {e}")
            continue
        fail(f"unknown op {op!r}")
