#!/usr/bin/env python3
"""kernelgate's `fla` worker: flash-linear-attention's Triton NSA (`fla.ops.nsa`, package
fla-core) for the `nsa` family. Protocol, files and timing: worker_common.py.

Mapping (src/family/nsa.rs): the layouts are fla's own (`q [B, T, HQ, D]`, `k`/`v` `[B, T, H, D]`,
gates `[B, T, HQ]`, `block_indices [B, T, H, S]`, `block_counts [B, T, H]`, `o [B, T, HQ, D]`),
the scale is fla's default `1/sqrt(D)`, and fla's kernel has the family's selection semantics:
slots past `block_counts` are not read, negative indices and keys past the query are skipped,
a block listed twice counts twice. Indices and counts are passed as int64 (fla documents
LongTensor), converted once before timing.

The op is what `fla.ops.nsa.parallel_nsa(q, k, v, g_slc=, g_swa=, block_indices=,
block_counts=, block_size=, window_size=)` computes, minus its mean-pooling of k and v (done
for the compressed branch, which this family does not have, even when `g_cmp` is None):
`ParallelNSAFunction` (the selected-block kernel) times `g_slc`, plus for `w > 0` fla's own
sliding-window path, `flash_attn.flash_attn_func(q, k, v, causal=True,
window_size=(w - 1, 0))` (FlashAttention 2) times `g_swa`.

Declined, with the reason: `G = hq/h` not a power of two ≥ 16 (a Triton tile dimension of fla's
kernel: parallel_nsa asserts it), a block size that is not a power of two (`tl.arange`), and
`w > 0` when FlashAttention 2 is not importable (fla then has no window path here).
"""
import worker_common as wc
from worker_common import torch

NEEDS = "fla-core (pip install fla-core)"
FLA = {}


def hello():
    wc.require_torch_cuda(NEEDS)
    try:
        import fla
        import fla.ops.nsa.parallel as par
    except Exception as e:
        raise wc.import_error(NEEDS, e)
    missing = [s for s in ("ParallelNSAFunction", "parallel_nsa") if not hasattr(par, s)]
    if missing:
        raise wc.Unavailable(f"needs fla.ops.nsa.parallel.{missing[0]}, which fla-core "
                             f"{getattr(fla, '__version__', '?')} lacks")
    FLA["par"] = par
    FLA["swa"] = getattr(par, "flash_attn_func", None)
    import triton
    return f"{getattr(fla, '__version__', wc.version_of('fla-core'))} (triton {triton.__version__})"


def check_nsa(shape, dtype):
    hq, h, bs, w = shape["hq"], shape["h"], shape["bs"], shape["w"]
    g = hq // h
    if g < 16 or g & (g - 1):
        return (f"fla's parallel_nsa needs G = hq/h a power of two >= 16 (a Triton tile "
                f"dimension; it asserts so): this case has G = {hq}/{h} = {g}")
    if bs & (bs - 1):
        return f"fla's NSA kernel needs the block size to be a power of two (tl.arange): bs = {bs}"
    if w > 0 and FLA.get("swa") is None:
        return ("fla's sliding-window branch calls flash_attn.flash_attn_func (FlashAttention 2), "
                "which is not importable here (pip install flash-attn): cases with w > 0 are "
                "declined rather than timed without their window")
    return None


def fam_nsa(t, shape, dtype):
    B, T, HQ, H, D, S, BS, W = (shape[k] for k in ("b", "t", "hq", "h", "d", "s", "bs", "w"))
    q = t["q"].view(B, T, HQ, D)
    k = t["k"].view(B, T, H, D)
    v = t["v"].view(B, T, H, D)
    g_slc = t["g_slc"].view(B, T, HQ)
    g_swa = t["g_swa"].view(B, T, HQ)
    bi = t["block_indices"].view(B, T, H, S).long()
    bc = t["block_counts"].view(B, T, H).long()
    scale = D ** -0.5
    nsa, swa = FLA["par"].ParallelNSAFunction, FLA["swa"]

    def fn():
        o = nsa.apply(q, k, v, bi, bc, BS, scale, None) * g_slc.unsqueeze(-1)
        if W > 0:
            o_swa = swa(q, k, v, causal=True, window_size=(W - 1, 0))
            o = torch.addcmul(o, o_swa, g_swa.unsqueeze(-1))
        return [o]

    variant = "fla ParallelNSAFunction * g_slc"
    if W > 0:
        variant += " + flash_attn_func(window) * g_swa"
    return fn, variant + " (parallel_nsa without its k/v mean-pooling)"


WORKER = wc.Worker("fla", hello, {"nsa": (fam_nsa, ["bf16", "fp16"], check_nsa)},
                   first_call_is_compile=True)

if __name__ == "__main__":
    wc.serve(WORKER)
