"""Same-run speed table: our wgmma attention next to torch SDPA, shape by shape.

Usage: python3 mha_sdpa_table.py BENCH_DIR VARIANT [VARIANT ...]
  BENCH_DIR holds the bench builds mwb_<VARIANT> of kernels/dev/run_mha_wgmma.sh. For each speed
  shape N of kernels/dev/mha_wgmma_bench.cu, MHA_BENCH_ROUNDS (3) rounds each run every
  variant's binary with `--speed-shape N` (its launch configurations interleaved; TIME lines
  `TIME <variant> <shape key> <config> <ms> <TFLOP/s>`) and time torch SDPA on the same shape in
  this process, in an order rotated per round; the table takes each one's median over the
  rounds, so all of one shape's numbers come from the same minute and drift favours none.
  MHA_BENCH_SHAPES=0,2,5 times only those speed shapes (indices into the bench's list).
  Columns: each variant's `auto` config (the Rust launcher's choice) and ratio to SDPA; the
  first variant's best config too.
SDPA: torch.nn.functional.scaled_dot_product_attention on [b, h, s, d] contiguous tensors with
the default dispatch (cuDNN where torch picks it; the backend it picks is printed), enable_gqa
for h != hkv; timed like the bench: 3 warm-ups, 100 ms of launches, then the median of 20
launches (CUDA events); inputs uniform like ours (Q in [-4, 4), K and V in [-1, 1)). Without
torch or a GPU for it, the table has ours only.
"""
import os
import re
import subprocess
import sys
import time


def sdpa_tflops(key):
    import torch
    import torch.nn.functional as F

    m = re.fullmatch(r"b(\d+)_h(\d+)_hkv(\d+)_sq(\d+)_sk(\d+)_d(\d+)_causal(\d)_(bf16|fp16)", key)
    b, h, hkv, sq, sk, d, causal = (int(x) for x in m.groups()[:7])
    dt = torch.bfloat16 if m.group(8) == "bf16" else torch.float16
    g = torch.Generator(device="cuda").manual_seed(42)
    q = (torch.rand(b, h, sq, d, device="cuda", generator=g) * 8 - 4).to(dt)
    k = (torch.rand(b, hkv, sk, d, device="cuda", generator=g) * 2 - 1).to(dt)
    v = (torch.rand(b, hkv, sk, d, device="cuda", generator=g) * 2 - 1).to(dt)
    gqa = h != hkv
    kw = {"enable_gqa": True} if gqa else {}
    if causal and sq != sk:
        from torch.nn.attention.bias import causal_lower_right

        def fn():
            return F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(sq, sk), **kw)

        backend = "causal_lower_right"
    else:

        def fn():
            return F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), **kw)

        try:
            from torch.nn.attention import SDPBackend

            idx = torch._fused_sdp_choice(q, k, v, None, 0.0, bool(causal), scale=None, enable_gqa=gqa)
            backend = SDPBackend(idx).name.lower()
        except Exception as e:  # private API moved
            backend = f"unknown ({type(e).__name__})"
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    t0 = time.time()
    while time.time() - t0 < 0.1:
        fn()
        torch.cuda.synchronize()
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    ms = []
    for _ in range(20):
        e0.record()
        fn()
        e1.record()
        torch.cuda.synchronize()
        ms.append(e0.elapsed_time(e1))
    ms.sort()
    med = ms[len(ms) // 2]
    flops = 4.0 * b * h * sq * sk * d * (0.5 if causal else 1.0)
    del q, k, v
    return flops / med / 1e9, backend


def main():
    bench_dir, variants = sys.argv[1], sys.argv[2:]
    try:
        import torch

        have_torch = torch.cuda.is_available()
        if have_torch:
            print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, cuDNN {torch.backends.cudnn.version()}")
    except Exception as e:
        print(f"torch unavailable ({type(e).__name__}: {e}): ours only")
        have_torch = False
    rounds = int(os.environ.get("MHA_BENCH_ROUNDS", "3"))
    rows = []  # (key, sdpa, backend, {variant: {config: tflops}})
    failed = False
    med = lambda xs: sorted(xs)[len(xs) // 2]
    only = os.environ.get("MHA_BENCH_SHAPES", "").strip()
    shapes = [int(x) for x in only.split(",")] if only else range(1000)
    for n in shapes:
        key, stop = None, False
        per = {}  # variant -> config -> [tflops per round]
        refs, backend = [], "-"
        for r in range(rounds):
            # Each round runs every variant and SDPA once, in an order rotated by the round, so
            # clock/thermal drift within the shape's minute favours none of them.
            order = variants + ["sdpa"]
            order = order[r % len(order):] + order[: r % len(order)]
            for v in order:
                if v == "sdpa":
                    if key is None or not have_torch:
                        continue
                    try:
                        tf, backend = sdpa_tflops(key)
                        refs.append(tf)
                        print(f"| {key:<44} | sdpa {tf:.1f} ({backend}) |")
                    except Exception as e:
                        backend = f"error {type(e).__name__}: {e}"
                    continue
                res = subprocess.run(
                    [os.path.join(bench_dir, f"mwb_{v}"), "--label", v, "--speed-shape", str(n)],
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                if res.returncode == 3:
                    stop = True
                    break
                print("\n".join(l for l in res.stdout.splitlines() if not l.startswith("TIME")))
                if res.returncode != 0:
                    failed = True
                    print(f"  {v} shape {n}: exit {res.returncode} {res.stderr.strip()[-300:]}")
                for line in res.stdout.splitlines():
                    p = line.split()
                    if len(p) == 6 and p[0] == "TIME":
                        key = p[2]
                        per.setdefault(v, {}).setdefault(p[3], []).append(float(p[5]))
            if stop:
                break
        if stop:
            break
        if key is None:
            continue
        if have_torch and key is not None and not refs:  # the shape's key came after SDPA's turn
            try:
                tf, backend = sdpa_tflops(key)
                refs.append(tf)
            except Exception as e:
                backend = f"error {type(e).__name__}: {e}"
        sys.stdout.flush()
        rows.append((key, med(refs) if refs else None, backend,
                     {v: {c: med(x) for c, x in cfgs.items()} for v, cfgs in per.items()}))

    head = ["shape", "SDPA TF/s (backend)"]
    for i, v in enumerate(variants):
        head += [f"{v} auto", "ratio"]
        if i == 0:
            head += [f"{v} best config", "ratio"]
    print("\n| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    ratios = {v: [] for v in variants}
    for key, ref, backend, per in rows:
        cells = [key, f"{ref:.1f} ({backend})" if ref else backend]
        for i, v in enumerate(variants):
            cfgs = per.get(v, {})
            a = cfgs.get("auto")
            cells += [f"{a:.1f}" if a else "-", f"{a / ref:.2f}x" if a and ref else "-"]
            if a and ref:
                ratios[v].append(a / ref)
            if i == 0:
                best = max(((tf, c) for c, tf in cfgs.items() if c != "auto"), default=None)
                cells += [f"{best[0]:.1f} {best[1]}" if best else "-", f"{best[0] / ref:.2f}x" if best and ref else "-"]
        print("| " + " | ".join(cells) + " |")
    for v in variants:
        r = ratios[v]
        if r:
            geo = 1.0
            for x in r:
                geo *= x
            print(f"{v}: geomean ours(auto)/SDPA {geo ** (1 / len(r)):.3f} over {len(r)} shapes, min {min(r):.2f}x")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
