#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cu with the session 33 candidates (dev bench only; the
product file changes only after the bench has checked and timed them).

gemm_s33_patch.py FILE MODE... applies, in place:
  counter  stage box number n of a warpgroup (a running count over its tiles) in staging box
           n % EPI_NBUF, so that tiles with an odd number of 64-column boxes keep alternating
           (session 32: `j & 1` made 128x64_ts overwrite a box still being read);
  nbuf     EPI_NBUF staging boxes per consumer warpgroup: two where they fit the 227 KiB, else
           one (192x192 with 4 stages), whose leader waits for the previous store's read of it
           (cp.async.bulk.wait_group.read 0) before the warpgroup rewrites it;
  entries  TMA-store entries for 128x64 and 192x192, and 2-CTA cluster entries of 192x192
           (register and TMA-store epilogue; cuBLAS's 3072^3 kernel is 192x192 in 2x1
           clusters), plus a 3-stage 192x192 (192x192s3: two staging boxes fit) with both.
Needs counter with nbuf, and both with entries. Exit status 1 if a pattern is missing.
It applies to kernels/gemm_wgmma.cu as of commit f20fd49 (with that commit's bench, built with
-DGW_S33); counter, nbuf and the 128x64 / 192x192 TMA-store entries went into the product file
after it (session 33), so it no longer applies to the current one."""
import sys

from patchlib import patch_file

path, modes = sys.argv[1], sys.argv[2:]
edits = []


def rep(old, new):
    edits.append((old, new))


if "counter" in modes:
    rep("""        float d[BN / 2];""", """        unsigned ebox = 0;  // TS: staging boxes filled so far by this warpgroup
        float d[BN / 2];""")
    rep("""                    const unsigned buf = ebuf + (unsigned)(j & 1) * CF::EPI_BOX_BYTES;""",
        """                    const unsigned buf = ebuf + (ebox++ % CF::EPI_NBUF) * CF::EPI_BOX_BYTES;""")
if "nbuf" in modes:
    rep("""    static constexpr unsigned SMEM_BYTES_TS = STAGES * STAGE_BYTES + 1024 + 1024 + NC_ * 2 * EPI_BOX_BYTES;""",
        """    static constexpr unsigned EPI_NBUF =
        STAGES * STAGE_BYTES + 2048 + NC_ * 2 * EPI_BOX_BYTES <= 232448 ? 2 : 1;
    static constexpr unsigned SMEM_BYTES_TS =
        STAGES * STAGE_BYTES + 1024 + 1024 + NC_ * EPI_NBUF * EPI_BOX_BYTES;""")
    rep("""                const unsigned ebuf = epi_base + (unsigned)cw * (2u * CF::EPI_BOX_BYTES);""",
        """                const unsigned ebuf = epi_base + (unsigned)cw * (CF::EPI_NBUF * CF::EPI_BOX_BYTES);""")
    rep("""                    if (leader) bulk_wait_read<1>();""",
        """                    if (leader) bulk_wait_read<(int)CF::EPI_NBUF - 1>();""")
if "entries" in modes:
    rep("typedef Cfg<3, 192, 4> Cfg192x192;\n",
        "typedef Cfg<3, 192, 4> Cfg192x192;\ntypedef Cfg<3, 192, 3> Cfg192x192s3;\n")
    rep("#undef GW_ENTRY_TS\n", """GW_ENTRY_TS(gemm_wgmma_bf16_128x64_ts, __nv_bfloat16, true, Cfg128x64)
GW_ENTRY_TS(gemm_wgmma_f16_128x64_ts, __half, false, Cfg128x64)
GW_ENTRY_TS(gemm_wgmma_bf16_192x192_ts, __nv_bfloat16, true, Cfg192x192)
GW_ENTRY_TS(gemm_wgmma_f16_192x192_ts, __half, false, Cfg192x192)
GW_ENTRY_C2_TS(gemm_wgmma_bf16_192x192_c2_ts, __nv_bfloat16, true, Cfg192x192)
GW_ENTRY_C2_TS(gemm_wgmma_f16_192x192_c2_ts, __half, false, Cfg192x192)
GW_ENTRY_TS(gemm_wgmma_bf16_192x192s3_ts, __nv_bfloat16, true, Cfg192x192s3)
GW_ENTRY_TS(gemm_wgmma_f16_192x192s3_ts, __half, false, Cfg192x192s3)
GW_ENTRY_C2_TS(gemm_wgmma_bf16_192x192s3_c2_ts, __nv_bfloat16, true, Cfg192x192s3)
GW_ENTRY_C2_TS(gemm_wgmma_f16_192x192s3_c2_ts, __half, false, Cfg192x192s3)
#undef GW_ENTRY_TS
""")
    rep("GW_ENTRY(gemm_wgmma_f16_192x192, __half, false, Cfg192x192, 1)\n",
        """GW_ENTRY(gemm_wgmma_f16_192x192, __half, false, Cfg192x192, 1)
GW_ENTRY_C2(gemm_wgmma_bf16_192x192_c2, __nv_bfloat16, true, Cfg192x192)
GW_ENTRY_C2(gemm_wgmma_f16_192x192_c2, __half, false, Cfg192x192)
""")
patch_file(path, edits)
