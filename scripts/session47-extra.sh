#!/usr/bin/env bash
# Session 47: issue 12's two shapes outside every suite (scripts/suites/issue12-extra.json), the
# current plans against KERNELGATE_GEMM_MISALIGNED_B=copy: scripts/session47-c2-harness.sh on that
# suite. Under $OUT: log.txt, x12-rank.md, x12-runs.tar.gz.
SUITE=scripts/suites/issue12-extra.json PREFIX=x12 exec bash scripts/session47-c2-harness.sh
