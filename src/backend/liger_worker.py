#!/usr/bin/env python3
"""kernelgate's `liger` worker: Liger-Kernel's Triton kernels (package liger-kernel) for the
row-wise families. Protocol, files and timing: worker_common.py.

Each family calls the autograd Function or kernel wrapper of Liger's default (Triton)
implementation, imported from its submodule (`liger_kernel.ops.rms_norm`, ...), with the
family's semantics (src/family/norms.rs): eps 1e-6, offset 0, norm weights (and LayerNorm bias)
in the case's weight dtype, outputs in the input dtype.

* `rmsnorm`, `rmsnorm_bwd`: `LigerRMSNormFunction` with `casting_mode="gemma"` (everything in
  fp32, one rounding of the output: the family's semantics; "llama" rounds x·rstd to the input
  dtype before the weight multiply). The backward runs through autograd on a forward built once;
  it is Liger's default `in_place=True`, so it writes dx into the dy buffer: timed repeats
  therefore run on the previous repeat's dx (the checked output comes from the first call).
* `fused_add_rmsnorm`: `LigerFusedAddRMSNormFunction` ("gemma"): the sum is stored in the input
  dtype and the statistics use the stored value, as the family (vLLM) defines; Liger returns
  the normalized rows and the sum as new tensors instead of updating x and residual in place
  (the same traffic).
* `layernorm`: `LigerLayerNormFunction` (fp32 statistics, one rounding).
* `softmax`: `LigerSoftmaxFunction`; `softmax_bwd`: `liger_kernel.ops.softmax._softmax_backward`,
  the kernel wrapper `LigerSoftmaxFunction.backward` runs, on the family's given `y` and `dy`.
* `cross_entropy_bwd` is declined: Liger computes the gradient inside its forward kernel (in
  place into the logits, reading host values) and its backward only scales it, so it has no
  backward to time against the family's; the fused forward+backward measured 722 us against our
  backward's 8.8 us at 4096x1000 bf16 on an H200, timed eagerly.
* `cross_entropy` is declined: Liger returns the per-row loss in the logits' dtype and no
  logsumexp, while the family's outputs are the fp32 loss and the fp32 logsumexp.

Rows longer than 65536 are declined for the single-block kernels (Liger raises).
"""
import worker_common as wc
from worker_common import EPS, MEM, torch

NEEDS = "liger-kernel (pip install liger-kernel)"
MAX_FUSED = 65536  # liger_kernel.ops.utils.calculate_settings
L = {}


def hello():
    wc.require_torch_cuda(NEEDS)
    try:
        import importlib

        import triton
        for key, mod in (("rms", "rms_norm"), ("add", "fused_add_rms_norm"), ("ln", "layer_norm"),
                         ("sm", "softmax"), ("utils", "utils")):
            # The submodules: Liger's default (Triton) implementations, never replaced by the
            # implementation selection that liger_kernel.ops applies to its own namespace.
            L[key] = importlib.import_module(f"liger_kernel.ops.{mod}")
    except Exception as e:
        raise wc.import_error(NEEDS, e)
    return f"{wc.version_of('liger-kernel')} (triton {triton.__version__})"


def check_row(shape, dtype):
    if shape["n"] > MAX_FUSED:
        return (f"Liger's row kernels hold a whole row in one Triton block (n <= {MAX_FUSED}): "
                f"n = {shape['n']}")
    return None


def check_ce(shape, dtype):
    return ("Liger's cross-entropy returns the per-row loss in the logits' dtype and no "
            "logsumexp; the family's outputs are the fp32 loss and the fp32 logsumexp")


def fam_rmsnorm(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    x, w = wc.rows(t["x"], m, n), t["w"]
    f = L["rms"].LigerRMSNormFunction
    return (lambda: [f.apply(x, w, EPS, 0.0, "gemma")]), "LigerRMSNormFunction(casting_mode=gemma)"


def fam_rmsnorm_bwd(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    x = wc.rows(t["x"], m, n).clone().requires_grad_(True)
    w = t["w"].clone().requires_grad_(True)
    dy = wc.rows(t["dy"], m, n)
    y = L["rms"].LigerRMSNormFunction.apply(x, w, EPS, 0.0, "gemma", True)

    def fn():  # the backward only: the forward graph is built once above
        return list(torch.autograd.grad(y, (x, w), dy, retain_graph=True))

    return fn, "autograd LigerRMSNormFunction(gemma) backward, in_place=True (dx into dy)"


def fam_fused_add_rmsnorm(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    x, r, w = wc.rows(t["x"], m, n), wc.rows(t["residual"], m, n), t["w"]
    f = L["add"].LigerFusedAddRMSNormFunction

    def fn():
        y, s = f.apply(x, r, w, EPS, 0.0, "gemma", False)
        return [y, s]

    return fn, "LigerFusedAddRMSNormFunction(casting_mode=gemma), out of place"


def fam_layernorm(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    x, w, b = wc.rows(t["x"], m, n), t["w"], t["b"]
    f = L["ln"].LigerLayerNormFunction
    return (lambda: [f.apply(x, w, b, EPS)]), "LigerLayerNormFunction"


def fam_softmax(t, shape, dtype):
    x = wc.rows(t["x"], shape["m"], shape["n"])
    f = L["sm"].LigerSoftmaxFunction
    return (lambda: [f.apply(x)]), "LigerSoftmaxFunction"


def fam_softmax_bwd(t, shape, dtype):
    m, n = shape["m"], shape["n"]
    y, dy = wc.rows(t["y"], m, n), wc.rows(t["dy"], m, n)
    block, warps = L["utils"].calculate_settings(n)
    bwd = L["sm"]._softmax_backward
    return (lambda: [bwd(dy, y, block, warps, False)]), "liger_kernel.ops.softmax._softmax_backward"


def check_ce_bwd(shape, dtype):
    return ("Liger has no standalone cross-entropy backward: its forward kernel writes the gradient "
            "in place of the logits (reading host values, so no CUDA graph) and its backward only "
            "scales it, so timing it against the family's backward alone would compare a fused "
            "forward+backward (measured 722 us vs our 8.8 us at 4096x1000 on an H200) with a "
            "backward")


FAMILIES = {
    "rmsnorm": (fam_rmsnorm, MEM, check_row),
    "rmsnorm_bwd": (fam_rmsnorm_bwd, MEM, check_row),
    "fused_add_rmsnorm": (fam_fused_add_rmsnorm, MEM, check_row),
    "layernorm": (fam_layernorm, MEM, check_row),
    "softmax": (fam_softmax, MEM, check_row),
    "softmax_bwd": (fam_softmax_bwd, MEM, check_row),
    "cross_entropy": (None, MEM, check_ce),
    "cross_entropy_bwd": (None, MEM, check_ce_bwd),
}

WORKER = wc.Worker("liger", hello, FAMILIES, first_call_is_compile=True)

if __name__ == "__main__":
    wc.serve(WORKER)
