#!/usr/bin/env python3
"""Applied AFTER kernels/dev/gemm_streamk_patch.py to the same bench copy: the per-CTA timeline
of the stream-K entries, for the dev bench's -DGW_TRACE mode (trace_report, 8 words per CTA),
and an SK_GRID override of the stream-K grid in the bench. Why: session 47's first run (H200
e6b7e31e) had the _sk rows 25-60% slower than the plain tile even under one wave of tiles,
where the even division should save a third of the main loop (docs/kernels/session47).

The first consumer warpgroup's leader (thread 128) records, as clock64 offsets from entry, in
the slots trace_report prints under these labels:
  "pdl"           the end of the CTA's first segment's main loop (wgmma_wait<0>),
  "first stage"   its partial stored and the flag released (0 when the first segment is whole
                  or holds its tile's first K block),
  "main loop end" the end of the last segment's main loop,
  "stores issued" the fix-up done (the later parts waited for and added; 0 when none),
  "exit"          the exit, after the TMA stores drained,
with %globaltimer at entry and exit. SK_GRID=tiles launches one CTA per tile (every segment a
whole tile: the plain tile's work through the stream-K code path), SK_GRID=N launches N.

gemm_sktrace_patch.py FILE. Exit status 1 if a pattern is missing (the file changed)."""
import os
import sys

from patchlib import patch_file
from trace_record import namespace_edit

path = sys.argv[1]
patch_file(path, [
    namespace_edit("gemm_sktrace_patch.py"),
    ("""    unsigned* const sk_flags = reinterpret_cast<unsigned*>(P);
""",
     """    unsigned* const sk_flags = reinterpret_cast<unsigned*>(P);
    const unsigned long long gw_g0 = gw_gt();
    const long long gw_c0 = clock64();
    long long gw_c1 = 0, gw_c2 = 0, gw_c3 = 0, gw_c5 = 0;
    int gw_seg = 0;
"""),
    ("""            wgmma_wait<0>();
            if (kb1 > kb0 && leader) release((it - 1) % STAGES);

            if constexpr (SK) {""",
     """            wgmma_wait<0>();
            if (kb1 > kb0 && leader) release((it - 1) % STAGES);
            if (SK && tid == 128) {
                if (gw_seg == 0) gw_c1 = clock64();
                gw_c3 = clock64();
                ++gw_seg;
            }

            if constexpr (SK) {"""),
    ("""                    if (leader) sk_red_release(flag, 1u);
                    continue;""",
     """                    if (leader) sk_red_release(flag, 1u);
                    if (tid == 128) gw_c2 = clock64();
                    continue;"""),
    ("""                        for (int i = 0; i < BN / 2; ++i) d[i] += __ldcg(slot + i * 128 + tw);
                    }
""",
     """                        for (int i = 0; i < BN / 2; ++i) d[i] += __ldcg(slot + i * 128 + tw);
                    }
                    if (tid == 128) gw_c5 = clock64();
"""),
    ("""        // TS: the staging boxes must stay until every tensor store has completed.
        if (TS && leader) bulk_wait_all();
    }""",
     """        // TS: the staging boxes must stay until every tensor store has completed.
        if (TS && leader) bulk_wait_all();
        if (SK && tid == 128) gw_record(gw_g0, gw_c0, gw_c1 ? gw_c1 : gw_c0, gw_c2 ? gw_c2 : gw_c0,
                                        gw_c3 ? gw_c3 : gw_c0, gw_c5 ? gw_c5 : gw_c0);
    }"""),
])

bench = os.path.join(os.path.dirname(path), "dev", "gemm_wgmma_bench.cu")
patch_file(bench, [
    ("""    long w = t.tiles(M, N) * ((K + 63) / 64);
    return std::max(1L, std::min<long>(g_num_sms, w / 4));""",
     """    long w = t.tiles(M, N) * ((K + 63) / 64);
    if (const char* e = getenv("SK_GRID")) {
        if (std::string(e) == "tiles") return t.tiles(M, N);
        return std::max(1L, std::min<long>(atol(e), w));
    }
    return std::max(1L, std::min<long>(g_num_sms, w / 4));"""),
])
