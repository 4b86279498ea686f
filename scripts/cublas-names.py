"""Prints the kernels cuBLAS (through torch.matmul, row-major A @ B) launches for each shape given
as MxNxK on the command line, bf16, with their CUDA time from the torch profiler."""
import sys
import torch
from torch.profiler import profile, ProfilerActivity

for spec in sys.argv[1:]:
    m, n, k = (int(x) for x in spec.split("x"))
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            torch.matmul(a, b)
        torch.cuda.synchronize()
    for e in prof.key_averages():
        if e.device_type.name == "CUDA" or getattr(e, "cuda_time", 0):
            t = getattr(e, "device_time", None) or getattr(e, "cuda_time", 0)
            print(f"{spec}: {e.key} x{e.count} avg {t:.2f} us")
