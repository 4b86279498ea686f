"""Does the SM clock explain the round-to-round spread of compute-bound timings?

Times torch.matmul (cuBLAS) 4096^3 fp16/bf16 and a 1 GiB copy in rounds after different heat
histories (idle, a hot 8192^3 GEMM burst), sampling the SM clock, power and clock-event reasons
through NVML on a thread during each round. Prints one line per round and a correlation summary.
Usage: python3 scripts/clock_probe.py [rounds]   (GPU machine; writes JSON to $OUT/clock_probe.json)
"""
import json, os, sys, threading, time, statistics as st
import torch, pynvml

pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
name = pynvml.nvmlDeviceGetName(h)
dev = torch.device("cuda:0")
flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)


class Sampler(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.on = True
        self.clk, self.pw, self.reasons = [], [], 0

    def run(self):
        while self.on:
            self.clk.append(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))
            self.pw.append(pynvml.nvmlDeviceGetPowerUsage(h) / 1000)
            try:
                self.reasons |= pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)
            except Exception:
                pass
            time.sleep(0.002)


def timed(fn, n):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for _ in range(n):
        flush.zero_()
        s.record(); fn(); e.record(); e.synchronize()
        out.append(s.elapsed_time(e))
    return st.median(out)


def case(kind, dt):
    if kind == "gemm":
        a = torch.randn(4096, 4096, device=dev, dtype=dt)
        b = torch.randn(4096, 4096, device=dev, dtype=dt)
        return lambda: a @ b
    x = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    y = torch.empty_like(x)
    return lambda: y.copy_(x)


big = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
histories = ["idle", "hot", "none"]
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 12
rows = []
for r in range(rounds):
    hist = histories[r % 3]
    if hist == "idle":
        torch.cuda.synchronize(); time.sleep(2.0)
    elif hist == "hot":
        t0 = time.time()
        while time.time() - t0 < 2.0:
            for _ in range(20):
                big @ big
            torch.cuda.synchronize()
    for kind, dt in [("gemm", torch.float16), ("gemm", torch.bfloat16), ("copy", torch.uint8)]:
        fn = case(kind, dt)
        timed(fn, 5)
        smp = Sampler(); smp.start()
        ms = timed(fn, 40)
        smp.on = False; smp.join()
        row = dict(round=r, history=hist, kind=kind, dtype=str(dt).split(".")[-1], ms=ms,
                   sm_mhz=st.median(smp.clk), sm_min=min(smp.clk), sm_max=max(smp.clk),
                   power_w=st.median(smp.pw), reasons=hex(smp.reasons), readings=len(smp.clk))
        rows.append(row)
        print(json.dumps(row), flush=True)
print("device", name)
for kind, dt in [("gemm", "float16"), ("gemm", "bfloat16"), ("copy", "uint8")]:
    sel = [x for x in rows if x["kind"] == kind and x["dtype"] == dt]
    ms = [x["ms"] for x in sel]; mhz = [x["sm_mhz"] for x in sel]
    cyc = [m * f for m, f in zip(ms, mhz)]
    sp = lambda v: (max(v) - min(v)) / st.median(v)
    print(f"{kind} {dt}: latency spread {sp(ms):.3%}, clock spread {sp(mhz):.3%}, "
          f"latency x clock spread {sp(cyc):.3%}")
out = os.environ.get("OUT")
if out:
    json.dump(dict(device=name, rows=rows), open(os.path.join(out, "clock_probe.json"), "w"), indent=1)
