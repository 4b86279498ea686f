#!/usr/bin/env python3
"""kernelgate's PyTorch worker: an external backend speaking the JSON-lines protocol
documented in src/backend/worker.rs (protocol 1).

Backends: `torch` (eager PyTorch) and `torch-compile` (`--compile`: torch.compile, Inductor's
Triton kernels; compile time reported separately from latency).

Each family maps the harness's named input tensors to the PyTorch op users run today and
returns the outputs in the family's order. The protocol, the raw input/output files and the
timing (CUDA-graph replays between CUDA events, eager fallback with the reason) are shared with
the other built-in workers: see worker_common.py.

Device: the worker uses its first visible device (`cuda`); the harness starts one worker per
device it runs cases on, with `CUDA_VISIBLE_DEVICES` naming only that device.
"""
import math
import sys
import time

import worker_common as wc
from worker_common import EPS, IGNORE_INDEX, MEM, F, torch

COMPILE = "--compile" in sys.argv
_rows = wc.rows


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


def compile_static(fn, variant):
    """torch.compile with static shapes, compiled afresh for each case: Dynamo caches compiled
    code per function, and every case of a family shares its closure's code, so from the second
    shape on it would compile a dynamic-shape kernel (symbolic strides), measured ~2x slower than
    the static one on an H200 (rmsnorm 65536x4096: 540 vs 287 us). Benchmarks by torch.compile's
    own authors compile per shape. Returns (fn, variant, seconds of the first, compiling call)."""
    torch._dynamo.reset()
    fn = torch.compile(fn, dynamic=False)
    t0 = time.monotonic()
    fn()
    torch.cuda.synchronize()
    return fn, f"torch.compile({variant})", time.monotonic() - t0


def hello():
    if wc.TORCH_ERROR:
        raise wc.Unavailable(f"cannot start: {wc.TORCH_ERROR}")
    if not torch.cuda.is_available():
        raise wc.Unavailable("cannot start: torch sees no CUDA device")
    return torch.__version__


WORKER = wc.Worker("torch-compile" if COMPILE else "torch", hello, FAMILIES,
                   compile=compile_static if COMPILE else None)

if __name__ == "__main__":
    wc.serve(WORKER)
