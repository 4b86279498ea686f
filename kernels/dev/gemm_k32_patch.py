#!/usr/bin/env python3
"""Dev experiment (session 29, issue 12): the GEMM body with a K step of 32 instead of 64.

Writes patched copies of kernels/gemm_wgmma.cu and kernels/dev/gemm_wgmma_bench.cu into
OUT_DIR/kernels/ (the committed files are not touched, so no baseline's source hash moves):

* `Cfg` gains a fourth parameter BK (default 64, every existing tile unchanged). With BK = 32 a
  stage holds half the K of today's, so the same shared memory holds twice the stages and only
  one small stage (not a quarter of the ring) is held by the wgmma in flight: 128x256 goes from
  4 x 48 KiB (3 loading while one is read) to 8 or 9 x 24 KiB (7 or 8 loading).
* A is K-major with 64-byte rows: TMA box {32 K, BM rows} with SWIZZLE_64B and a wgmma descriptor
  of layout SW64 (SBO 512 B, start advanced 32 B per k16 step). B keeps SW128 with boxes of
  {64 N, 32 K} (LBO 4096 B).
* New entries gemm_wgmma_{bf16,f16}_{128x256k32s8, 128x256k32s9, 192x192k32s9}; the bench's tile
  table gets them (pass --tiles to pick them) and builds each tile's maps from its K step.

Usage: gemm_k32_patch.py REPO_ROOT OUT_DIR; then build OUT_DIR/kernels/dev/gemm_wgmma_bench.cu
as scripts/session29-gemm-k32.sh does.
"""
import os
import shutil
import sys


def sub(text, old, new, count=1):
    n = text.count(old)
    if n != count:
        sys.exit(f"patch: expected {count} occurrence(s) of {old!r}, found {n}")
    return text.replace(old, new)


def patch_kernel(src):
    s = src
    s = sub(s, "template <int NC_, int BN_, int STAGES_>\nstruct Cfg {\n",
            "template <int NC_, int BN_, int STAGES_, int BK_ = 64>\nstruct Cfg {\n"
            "    static constexpr int BK = BK_;\n")
    s = sub(s, "    static constexpr unsigned SMEM_BYTES = STAGES * STAGE_BYTES + 1024 + 128;\n",
            "    static constexpr unsigned SMEM_BYTES =\n"
            "        STAGES * STAGE_BYTES + 1024 + (STAGES_ > 8 ? 256 : 128);\n")
    s = sub(s, "    static_assert(2 * STAGES_ * 8 <= 128, \"mbarriers fit their 128 bytes\");\n",
            "    static_assert(2 * STAGES_ * 8 <= (STAGES_ > 8 ? 256 : 128), \"mbarriers fit\");\n"
            "    static_assert(BK_ == 64 || BK_ == 32, \"K step 64 (SW128 A) or 32 (SW64 A)\");\n")
    s = sub(s, "typedef Cfg<3, 192, 4> Cfg192x192;\n",
            "typedef Cfg<3, 192, 4> Cfg192x192;\n"
            "typedef Cfg<2, 256, 8, 32> Cfg128x256k32s8;\n"
            "typedef Cfg<2, 256, 9, 32> Cfg128x256k32s9;\n"
            "typedef Cfg<3, 192, 9, 32> Cfg192x192k32s9;\n")
    s = sub(s, "    d |= 1ull << 62;  // SWIZZLE_128B\n    return d;\n}\n",
            "    d |= 1ull << 62;  // SWIZZLE_128B\n    return d;\n}\n"
            "static __device__ __forceinline__ unsigned long long make_desc_sw64(unsigned addr,\n"
            "                                                                    unsigned lbo,\n"
            "                                                                    unsigned sbo) {\n"
            "    unsigned long long d = 0;\n"
            "    d |= (unsigned long long)((addr & 0x3FFFF) >> 4);\n"
            "    d |= (unsigned long long)((lbo & 0x3FFFF) >> 4) << 16;\n"
            "    d |= (unsigned long long)((sbo & 0x3FFFF) >> 4) << 32;\n"
            "    d |= 2ull << 62;  // SWIZZLE_64B\n"
            "    return d;\n}\n")
    s = sub(s, "    constexpr int NC = CF::NC;\n",
            "    constexpr int NC = CF::NC;\n"
            "    constexpr int BK = CF::BK;  // shadows the file's 64\n"
            "    constexpr unsigned B_BOX_BYTES = 64 * BK * 2;\n"
            "    constexpr unsigned B_DESC_LBO = B_BOX_BYTES;\n")
    s = sub(s, "rank * (64 * 128)", "rank * (64 * BK * 2)")
    s = sub(s, "cw * (64 * 128)", "cw * (64 * BK * 2)")
    s = sub(s, "const unsigned long long da = make_desc(a_s + kk * 32, 16, 1024);",
            "const unsigned long long da = BK == 64 ? make_desc(a_s + kk * 32, 16, 1024)\n"
            "                                                     : make_desc_sw64(a_s + kk * 32, 16, 512);")
    s = sub(s, "GW_ENTRY(gemm_wgmma_f16_192x192, __half, false, Cfg192x192, 1)\n",
            "GW_ENTRY(gemm_wgmma_f16_192x192, __half, false, Cfg192x192, 1)\n"
            "GW_ENTRY(gemm_wgmma_bf16_128x256k32s8, __nv_bfloat16, true, Cfg128x256k32s8, 1)\n"
            "GW_ENTRY(gemm_wgmma_f16_128x256k32s8, __half, false, Cfg128x256k32s8, 1)\n"
            "GW_ENTRY(gemm_wgmma_bf16_128x256k32s9, __nv_bfloat16, true, Cfg128x256k32s9, 1)\n"
            "GW_ENTRY(gemm_wgmma_f16_128x256k32s9, __half, false, Cfg128x256k32s9, 1)\n"
            "GW_ENTRY(gemm_wgmma_bf16_192x192k32s9, __nv_bfloat16, true, Cfg192x192k32s9, 1)\n"
            "GW_ENTRY(gemm_wgmma_f16_192x192k32s9, __half, false, Cfg192x192k32s9, 1)\n")
    return s


def patch_bench(src):
    s = src
    s = sub(s, "static CUtensorMap make_map(CUtensorMapDataType dt, const void* ptr, unsigned long long inner,\n"
               "                            unsigned long long outer, unsigned box_inner, unsigned box_outer) {\n",
            "static CUtensorMap make_map(CUtensorMapDataType dt, const void* ptr, unsigned long long inner,\n"
            "                            unsigned long long outer, unsigned box_inner, unsigned box_outer,\n"
            "                            CUtensorMapSwizzle sw = CU_TENSOR_MAP_SWIZZLE_128B) {\n")
    s = sub(s, "CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,",
            "CU_TENSOR_MAP_INTERLEAVE_NONE, sw,")
    s = sub(s, "    const void* f16;\n    int threads() const",
            "    const void* f16;\n    int bk = 64;  // K step (32: A rows of 64 bytes, SW64)\n    int threads() const")
    s = sub(s, "    unsigned smem() const { return stages * (bm + bn) * 64 * 2 + 1024 + 128; }",
            "    unsigned smem() const { return stages * (bm + bn) * bk * 2 + 1024 + (stages > 8 ? 256 : 128); }")
    row = ('    {"192x192", 192, 192, 4, 1, 860, 8000, 1, false, (const void*)gemm_wgmma_bf16_192x192, '
           '(const void*)gemm_wgmma_f16_192x192},\n')
    new = ""
    for name, bm, bn, st in (("128x256k32s8", 128, 256, 8), ("128x256k32s9", 128, 256, 9),
                             ("192x192k32s9", 192, 192, 9)):
        base = f"{bm}x{bn}"
        kns, wns = (760, 8000) if base == "128x256" else (860, 8000)
        new += (f'    {{"{name}", {bm}, {bn}, {st}, 1, {kns}, {wns}, 1, false, '
                f'(const void*)gemm_wgmma_bf16_{name}, (const void*)gemm_wgmma_f16_{name}, 32}},\n')
    s = sub(s, row, row + new)
    s = sub(s, "static const int NT = 11;", "static const int NT = 14;")
    s = sub(s, "CUtensorMap ta = make_map(KInfo<T>::tdt, A, K, M, 64, cfg.a_box_rows());\n"
               "        CUtensorMap tb = make_map(KInfo<T>::tdt, B, N, K, 64, 64);\n",
            "CUtensorMap ta = make_map(KInfo<T>::tdt, A, K, M, cfg.bk, cfg.a_box_rows(),\n"
            "                                  cfg.bk == 32 ? CU_TENSOR_MAP_SWIZZLE_64B : CU_TENSOR_MAP_SWIZZLE_128B);\n"
            "        CUtensorMap tb = make_map(KInfo<T>::tdt, B, N, K, 64, cfg.bk);\n")
    return s


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    root, out = sys.argv[1], sys.argv[2]
    os.makedirs(os.path.join(out, "kernels", "dev"), exist_ok=True)
    for f in os.listdir(os.path.join(root, "kernels")):
        if f.endswith((".cu", ".cuh")):
            shutil.copy(os.path.join(root, "kernels", f), os.path.join(out, "kernels", f))
    with open(os.path.join(root, "kernels", "gemm_wgmma.cu")) as fh:
        k = patch_kernel(fh.read())
    with open(os.path.join(out, "kernels", "gemm_wgmma.cu"), "w") as fh:
        fh.write(k)
    with open(os.path.join(root, "kernels", "dev", "gemm_wgmma_bench.cu")) as fh:
        b = patch_bench(fh.read())
    with open(os.path.join(out, "kernels", "dev", "gemm_wgmma_bench.cu"), "w") as fh:
        fh.write(b)
    print(f"patched into {out}/kernels")


if __name__ == "__main__":
    main()
