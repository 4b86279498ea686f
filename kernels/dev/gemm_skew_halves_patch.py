#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cu (session 36): in the skewed tail of the overlapped
128x256_ts path (the CTA's last tile; warpgroup 0 issues the last STAGES blocks first), warpgroup
1 issues its STAGES blocks column half by half, so that boxes 0 and 1 are stored while columns
128..255 still run and only a quarter of the tile is left to write after the last MMA (the
shipped tail leaves half). Columns 0..127 go as m64n128k16 into d[0..63]. An m64n128 on the
upper half of the m64n256 accumulators makes ptxas serialize the entry (C7511), and so does a
64-register array that takes over d[64..127] (ptxas gives it the same registers), so columns
128..255 go:
- `zero` (default): into a zeroed array e, added to d[64..127] at the end (both halves issued
  back to back; d + e at once);
- `serial`: into d[0..63] again, after the first half has completed and been packed for its
  stores, with d[64..127] moved there first (a drain between the halves, half the registers).
- `none`: no tail edit (with `r240`, the control for the register split alone).
A previous tile's pending boxes are stored before the tail, so that pk is dead there.
`r240` (a second argument after the mode) moves the two-consumer entries' register split from
40 / 232 to 24 / 240 (FlashAttention-3's), where `zero` spilled 208 bytes at 232.

gemm_skew_halves_patch.py FILE [zero|serial|none] [r240]. Exit status 1 if a pattern is missing (the file
changed)."""
import sys

from patchlib import patch_file


def ops(arr, off):
    return ", ".join(f'"+f"({arr}[{off} + {i}])' for i in range(64))


helper_old = """static __device__ __forceinline__ void wgmma_fence() {"""
helper_new = (
    """// One m64n128k16 into acc[O .. O + 63] (m64n128's register layout is the first half of
// m64n256's).
template <bool BF16, int O, int N>
static __device__ __forceinline__ void wgmma_n128(float (&acc)[N], unsigned long long da,
                                                  unsigned long long db) {
    if constexpr (BF16) {
        asm volatile(GW_WGMMA_ASM_N128("bf16") : """
    + ops("acc", "O")
    + """ : "l"(da), "l"(db), "r"(1));
    } else {
        asm volatile(GW_WGMMA_ASM_N128("f16") : """
    + ops("acc", "O")
    + """ : "l"(da), "l"(db), "r"(1));
    }
}

static __device__ __forceinline__ void wgmma_fence() {"""
)


def pack(j0, j1):
    return f"""#pragma unroll
                            for (int j = {j0}; j < {j1}; ++j)
#pragma unroll
                                for (int q = 0; q < 4; ++q) {{
                                    const int b = 8 * j + 2 * q;
                                    pk[16 * j + 4 * q + 0] = pack2_bits<T>(d[4 * b + 0], d[4 * b + 1]);
                                    pk[16 * j + 4 * q + 1] = pack2_bits<T>(d[4 * b + 2], d[4 * b + 3]);
                                    pk[16 * j + 4 * q + 2] = pack2_bits<T>(d[4 * b + 4], d[4 * b + 5]);
                                    pk[16 * j + 4 * q + 3] = pack2_bits<T>(d[4 * b + 6], d[4 * b + 7]);
                                }}
"""


def half(acc, box_off, wait_full):
    w = "mbar_wait(GW_FULL(s), ((it + j) / STAGES) & 1u);" if wait_full else ""
    return f"""#pragma unroll
                            for (int j = 0; j < STAGES; ++j) {{
                                const unsigned s = (it + j) % STAGES;
                                {w}
                                const unsigned a_s = a_base + s * A_STAGE_BYTES + cw * (64 * 128);
                                const unsigned b_s = b_base + s * B_STAGE_BYTES + {box_off};
                                wgmma_fence();
#pragma unroll
                                for (int kk = 0; kk < BK / 16; ++kk)
                                    wgmma_n128<BF16, 0>({acc}, make_desc(a_s + kk * 32, 16, 1024),
                                                        make_desc(b_s + kk * 2048, B_DESC_LBO, B_DESC_SBO));
                                wgmma_commit();
                            }}
"""


mode = sys.argv[2] if len(sys.argv) > 2 else "zero"
if set(sys.argv[3:]) - {"r240"}:
    sys.exit(f"options {sys.argv[3:]}: only r240")
head = """                        while (nbox < 4) store_next();  // the previous tile, if pending
                        if (cw == 1) {
                            wgmma_wait<0>();
                            if (leader) release((it - 1) % STAGES);
                            named_bar_sync(3u, 256u);
                            ptm = tm;
                            ptn = tn;
"""
end = """                            if (leader)
                                for (int j = 0; j < STAGES; ++j) release((it + j) % STAGES);
                            it += STAGES;
""" + pack(2, 4) + """                            store_box(2);
                            store_box(3);
                            nbox = 4;
                            break;  // the CTA's last tile
                        }"""
if mode == "zero":
    body = (
        half("d", "0", True)
        + """                            float e[64];  // columns 128..255, added to d[64..127] at the end
#pragma unroll
                            for (int i = 0; i < 64; ++i) e[i] = 0.0f;
"""
        + half("e", "2 * B_BOX_BYTES", False)
        + """                            wgmma_wait<STAGES>();  // columns 0..127 final
"""
        + pack(0, 2)
        + """                            store_box(0);
                            store_box(1);
                            wgmma_wait<0>();
#pragma unroll
                            for (int i = 0; i < 64; ++i) d[64 + i] += e[i];
"""
    )
elif mode == "serial":
    body = (
        half("d", "0", True)
        + """                            wgmma_wait<0>();  // columns 0..127 final
"""
        + pack(0, 2)
        + """#pragma unroll
                            for (int i = 0; i < 64; ++i) d[i] = d[64 + i];
"""
        + half("d", "2 * B_BOX_BYTES", False)
        + """                            store_box(0);
                            store_box(1);
                            wgmma_wait<0>();
#pragma unroll
                            for (int i = 0; i < 64; ++i) d[64 + i] = d[i];
"""
    )
elif mode != "none":
    sys.exit(f"mode {mode!r}: zero, serial or none")
tail_old = """                        if (cw == 1) {
                            wgmma_wait<0>();
                            if (leader) release((it - 1) % STAGES);
                            named_bar_sync(3u, 256u);
                        }"""
edits = [] if mode == "none" else [(helper_old, helper_new), (tail_old, head + body + end)]
if "r240" in sys.argv[3:]:
    edits += [
        (
            'if constexpr (NC >= 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");',
            'if constexpr (NC == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");\n'
            '        if constexpr (NC == 3) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");',
        ),
        (
            'if constexpr (NC == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");',
            'if constexpr (NC == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");',
        ),
    ]
patch_file(sys.argv[1], edits)
