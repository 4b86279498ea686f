#!/usr/bin/env python3
"""Patches a COPY of kernels/gemm_wgmma.cu (session 34) with a per-CTA timeline for the dev
bench's -DGW_TRACE mode: the first consumer warpgroup's leader (thread 128) records, per CTA,
%globaltimer at entry and exit and clock64 offsets from entry of: the PDL wait done, the first
full stage seen, the last tile's main loop done (wgmma_wait<0>), the last store issued (before
the TMA-store drain) and the exit (after it), with %smid. Both consumer bodies are hooked: the
general one and the overlapped-epilogue one of the 128x256 TMA-store tile (shipped in 5183653).
Only the TMA-store entries reach the exit record. Nothing else changes.

gemm_trace_patch.py FILE. Exit status 1 if a pattern is missing (the file changed)."""
import sys

from patchlib import patch_file
from trace_record import namespace_edit


edits = [
    namespace_edit("gemm_trace_patch.py"),
    ("""    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {""",
     """    const unsigned long long gw_g0 = gw_gt();
    const long long gw_c0 = clock64();
    long long gw_c1 = 0, gw_c2 = 0, gw_c3 = 0;
    if (tid == 0) {
        for (int s = 0; s < STAGES; ++s) {"""),
    ("""    pdl_launch_next();
    pdl_wait_previous();

""",
     """    pdl_launch_next();
    pdl_wait_previous();
    if (tid == 128) gw_c1 = clock64();

"""),
    # the general consumer body
    ("""                mbar_wait(GW_FULL(s), ph);
                const unsigned a_s""",
     """                mbar_wait(GW_FULL(s), ph);
                if (it == 0 && tid == 128) gw_c2 = clock64();
                const unsigned a_s"""),
    ("""            wgmma_wait<0>();
            if (kb1 > kb0 && leader) release((it - 1) % STAGES);
""",
     """            wgmma_wait<0>();
            if (tid == 128) gw_c3 = clock64();
            if (kb1 > kb0 && leader) release((it - 1) % STAGES);
"""),
    ("""        if (TS && leader) bulk_wait_all();
""",
     """        const long long gw_c5 = clock64();
        if (TS && leader) bulk_wait_all();
        if (TS && tid == 128) gw_record(gw_g0, gw_c0, gw_c1, gw_c2, gw_c3, gw_c5);
"""),
    # the overlapped-epilogue body (128x256 TMA store)
    ("""                        mbar_wait(GW_FULL(s), ph);
                        const unsigned a_s""",
     """                        mbar_wait(GW_FULL(s), ph);
                        if (it == 0 && tid == 128) gw_c2 = clock64();
                        const unsigned a_s"""),
    ("""                    wgmma_wait<0>();
                    if (num_k > 0 && leader) release((it - 1) % STAGES);
""",
     """                    wgmma_wait<0>();
                    if (tid == 128) gw_c3 = clock64();
                    if (num_k > 0 && leader) release((it - 1) % STAGES);
"""),
    ("""                while (nbox < 4) store_next();  // the CTA's last tile
                if (leader) bulk_wait_all();
""",
     """                while (nbox < 4) store_next();  // the CTA's last tile
                const long long gw_c5 = clock64();
                if (leader) bulk_wait_all();
                if (tid == 128) gw_record(gw_g0, gw_c0, gw_c1, gw_c2, gw_c3, gw_c5);
"""),
]
patch_file(sys.argv[1], edits)
