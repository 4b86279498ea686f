#!/usr/bin/env python3
"""kernelgate's `flash-attn` worker: FlashAttention for the `mha` family. Protocol, files and
timing: worker_common.py.

Implementation: the first importable of FlashAttention 3 (`flash_attn_interface`, built from
the repo's hopper/ directory), FlashAttention 4 (`flash_attn.cute`, package flash-attn-4 on
nvidia-cutlass-dsl) and FlashAttention 2 (`flash_attn`, package flash-attn); the environment
variable KERNELGATE_FLASH_ATTN=fa2|fa3|fa4 picks one. The hello's version names which.

Mapping (src/family/mha.rs): FlashAttention's layout is `[batch, seq, heads, head_dim]`, the
family's `[batch, heads, seq, head_dim]`: Q, K and V are transposed to contiguous
`[b, s, h, d]` once before timing (the layout FlashAttention users hold) and the output is
transposed back only for the check, so neither copy is timed. The scale is FlashAttention's
default `1/sqrt(d)`; GQA/MQA are native (`hkv` divides `h`); FlashAttention's causal mask is
aligned to the end (query i sees keys j <= i + sk - sq), as the family defines, and a query row
that sees no key gives 0 in both.
"""
import os
import sys

import worker_common as wc

NEEDS = ("FlashAttention: flash-attn-4 (pip install flash-attn-4 'nvidia-cutlass-dsl[cu13]'), "
         "flash_attn_interface (FA3, built from flash-attention/hopper) or flash-attn (FA2)")
FA = {}


def _fa3():
    import flash_attn_interface as m
    ver = wc.version_of("flash_attn_3", None) or wc.version_of("flash-attn-3", None) or getattr(m, "__version__", "unknown")
    return m.flash_attn_func, f"{ver} (FA3, flash_attn_interface)"


def _fa4():
    wc.process_pth_files()
    from flash_attn.cute import flash_attn_func
    return flash_attn_func, (f"{wc.version_of('flash-attn-4')} (FA4, flash_attn.cute on "
                             f"cutlass-dsl {wc.version_of('nvidia-cutlass-dsl')})")


def _fa2():
    import flash_attn
    from flash_attn import flash_attn_func
    return flash_attn_func, f"{flash_attn.__version__} (FA2)"


IMPLS = {"fa3": _fa3, "fa4": _fa4, "fa2": _fa2}


def hello():
    wc.require_torch_cuda(NEEDS)
    want = os.environ.get("KERNELGATE_FLASH_ATTN", "").strip().lower()
    if want and want not in IMPLS:
        raise wc.Unavailable(f"KERNELGATE_FLASH_ATTN={want!r}: expected one of fa2, fa3, fa4")
    errors = []
    for key in [want] if want else ["fa3", "fa4", "fa2"]:
        try:
            FA["fn"], version = IMPLS[key]()
            FA["key"] = key
            return version
        except Exception as e:
            errors.append(f"{key}: {type(e).__name__}: {e}")
    raise wc.Unavailable(f"needs {NEEDS}; none is importable with {sys.executable}: " + "; ".join(errors))


def fam_mha(t, shape, dtype):
    b, h, hkv, sq, sk, d = (shape[k] for k in ("b", "h", "hkv", "sq", "sk", "d"))
    causal = bool(shape["causal"])
    q = t["Q"].view(b, h, sq, d).transpose(1, 2).contiguous()
    k = t["K"].view(b, hkv, sk, d).transpose(1, 2).contiguous()
    v = t["V"].view(b, hkv, sk, d).transpose(1, 2).contiguous()
    f = FA["fn"]

    def fn():
        o = f(q, k, v, causal=causal)
        return [o[0] if isinstance(o, tuple) else o]  # FA4 (and older FA3) also return the lse

    def to_outputs(outs):  # [b, sq, h, d] -> the family's [b, h, sq, d]
        return [outs[0].transpose(1, 2)]

    return fn, f"flash_attn_func[{FA['key']}] (causal={causal})", to_outputs


WORKER = wc.Worker("flash-attn", hello, {"mha": (fam_mha, ["bf16", "fp16"])},
                   first_call_is_compile=True)

if __name__ == "__main__":
    wc.serve(WORKER)
