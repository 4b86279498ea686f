#!/usr/bin/env python3
"""kernelgate's `quack` worker: Quack's CuTe DSL kernels (package quack-kernels, on
nvidia-cutlass-dsl) for the row-wise families, on Hopper and newer. Protocol, files and timing:
worker_common.py.

Mapping (src/family/norms.rs; eps 1e-6, targets int64, ignore_index -100):

* `rmsnorm`: `quack.rmsnorm(x, w, eps=1e-6)` (fp32 math, one rounding; weights fp32, fp16 or bf16).
* `rmsnorm_bwd`: autograd through `quack.rmsnorm` on a forward built once (quack's
  `rmsnorm_bwd`: dx and dw, dw summed in fp32 and cast to the weight dtype).
* `layernorm`: `quack.rmsnorm.layernorm_fwd(x, w, b, eps=1e-6)`; quack requires fp32 weight and
  bias, so only `w32` cases run (others are declined with that reason).
* `softmax`: `quack.softmax(x)`; `softmax_bwd`: `quack.softmax.softmax_bwd(dy, y)` (the
  function quack's autograd backward calls) on the family's `y` and `dy`.
* `cross_entropy`: `quack.cross_entropy.cross_entropy_fwd(x, target, return_lse=True)`: the
  per-row fp32 loss and the fp32 logsumexp, the family's two outputs.
* `cross_entropy_bwd`: `quack.cross_entropy.cross_entropy_bwd(x, target, dloss, lse)`, quack's
  backward, which takes the forward's saved lse instead of recomputing it; lse comes from one
  `cross_entropy_fwd` before timing (as a training step has it from its forward).

Kernels are compiled on the first call of each configuration (CuTe DSL JIT); that first call's
time is reported as `compile_s`.
"""
import worker_common as wc
from worker_common import EPS, IGNORE_INDEX, MEM, torch

NEEDS = ("quack-kernels with nvidia-cutlass-dsl (pip install quack-kernels "
         "'nvidia-cutlass-dsl[cu13]' apache-tvm-ffi torch-c-dlpack-ext)")
Q = {}


def hello():
    wc.require_torch_cuda(NEEDS)
    wc.process_pth_files()
    try:
        import importlib

        import quack
        for key, mod in (("rms", "quack.rmsnorm"), ("sm", "quack.softmax"), ("ce", "quack.cross_entropy")):
            Q[key] = importlib.import_module(mod)
    except Exception as e:
        raise wc.import_error(NEEDS, e)
    major, minor = torch.cuda.get_device_capability()
    if major < 9:
        raise wc.Unavailable(f"needs a Hopper or newer GPU (quack's kernels): this one is sm_{major}{minor}")
    ver = getattr(quack, "__version__", None) or wc.version_of("quack-kernels")
    return f"{ver} (cutlass-dsl {wc.version_of('nvidia-cutlass-dsl')})"


def check_layernorm(shape, dtype):
    if shape.get("w") != 32:
        return ("quack's layernorm_fwd requires fp32 weight and bias: only w32 cases run "
                f"(this case has w{shape.get('w')})")
    return None


def fam_rmsnorm(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    x, w = wc.rows(t["x"], m, n), t["w"]
    f = Q["rms"].rmsnorm
    return (lambda: [f(x, w, eps=EPS)]), "quack.rmsnorm"


def fam_rmsnorm_bwd(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    x = wc.rows(t["x"], m, n).clone().requires_grad_(True)
    w = t["w"].clone().requires_grad_(True)
    dy = wc.rows(t["dy"], m, n)
    y = Q["rms"].rmsnorm(x, w, eps=EPS)

    def fn():  # the backward only: the forward graph is built once above
        return list(torch.autograd.grad(y, (x, w), dy, retain_graph=True))

    return fn, "autograd quack.rmsnorm backward (quack rmsnorm_bwd)"


def fam_layernorm(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    x, w, b = wc.rows(t["x"], m, n), t["w"], t["b"]
    f = Q["rms"].layernorm_fwd
    return (lambda: [f(x, w, b, eps=EPS)]), "quack layernorm_fwd"


def fam_softmax(t, shape, dtype):
    x = wc.rows(t["x"], shape["m"], shape["n"])
    f = Q["sm"].softmax
    return (lambda: [f(x)]), "quack.softmax"


def fam_softmax_bwd(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    y, dy = wc.rows(t["y"], m, n), wc.rows(t["dy"], m, n)
    f = Q["sm"].softmax_bwd
    return (lambda: [f(dy, y)]), "quack softmax_bwd"


def fam_cross_entropy(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    x, tg = wc.rows(t["logits"], m, n), t["targets"].long()
    f = Q["ce"].cross_entropy_fwd

    def fn():
        loss, lse = f(x, tg, ignore_index=IGNORE_INDEX, return_lse=True)
        return [loss, lse]

    return fn, "quack cross_entropy_fwd(return_lse=True)"


def fam_cross_entropy_bwd(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    x, tg, dloss = wc.rows(t["logits"], m, n), t["targets"].long(), t["dloss"]
    ce = Q["ce"]
    _, lse = ce.cross_entropy_fwd(x, tg, ignore_index=IGNORE_INDEX, return_lse=True)
    f = ce.cross_entropy_bwd
    return (lambda: [f(x, tg, dloss, lse, ignore_index=IGNORE_INDEX)]), "quack cross_entropy_bwd (saved lse)"


FAMILIES = {
    "rmsnorm": (fam_rmsnorm, MEM),
    "rmsnorm_bwd": (fam_rmsnorm_bwd, MEM),
    "layernorm": (fam_layernorm, MEM, check_layernorm),
    "softmax": (fam_softmax, MEM),
    "softmax_bwd": (fam_softmax_bwd, MEM),
    "cross_entropy": (fam_cross_entropy, MEM),
    "cross_entropy_bwd": (fam_cross_entropy_bwd, MEM),
}

WORKER = wc.Worker("quack", hello, FAMILIES, first_call_is_compile=True)

if __name__ == "__main__":
    wc.serve(WORKER)
