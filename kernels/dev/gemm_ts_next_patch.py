#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cu with the session 32 follow-ups of the TMA-store
epilogue (dev bench only; never run on the product file without re-gating every wgmma entry).

gemm_ts_next_patch.py FILE MODE... applies, in place:
  prefetch  the consumer leaders prefetch C's tensor map at kernel start (the first tensor store
            otherwise fetches the descriptor at the end of the kernel, on the critical path);
  counter   stage box number n of the CTA (a running count over its tiles) in staging box n & 1,
            so that tiles with an odd number of 64-column boxes keep the two boxes alternating
            (with `j & 1`, 128x64 overwrote a box its previous tile's store was still reading);
  entries   TMA-store entries for 128x64 and 64x256 (the bench's -DGW_EXTRA_TS rows).
Exit status 1 if a pattern is missing (the file changed)."""
import sys

from patchlib import patch_file

path, modes = sys.argv[1], sys.argv[2:]
edits = []


def rep(old, new):
    edits.append((old, new))


if "prefetch" in modes:
    rep("""        unsigned it = 0;
        float d[BN / 2];""", """        unsigned it = 0;
        if (TS && leader)
            asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<unsigned long long>(tmC))
                         : "memory");
        float d[BN / 2];""")
if "counter" in modes:
    rep("""        float d[BN / 2];""", """        unsigned ebox = 0;  // TS: staging boxes filled so far by this warpgroup
        float d[BN / 2];""")
    rep("""                    const unsigned buf = ebuf + (unsigned)(j & 1) * CF::EPI_BOX_BYTES;""",
        """                    const unsigned buf = ebuf + (ebox++ & 1u) * CF::EPI_BOX_BYTES;""")
if "entries" in modes:
    rep("#undef GW_ENTRY_TS\n", """GW_ENTRY_TS(gemm_wgmma_bf16_128x64_ts, __nv_bfloat16, true, Cfg128x64)
GW_ENTRY_TS(gemm_wgmma_f16_128x64_ts, __half, false, Cfg128x64)
GW_ENTRY_TS(gemm_wgmma_bf16_64x256_ts, __nv_bfloat16, true, Cfg64x256)
GW_ENTRY_TS(gemm_wgmma_f16_64x256_ts, __half, false, Cfg64x256)
#undef GW_ENTRY_TS
""")
patch_file(path, edits)
