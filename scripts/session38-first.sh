#!/usr/bin/env bash
# Session 38, any machine (repo root, .devbin/ carried). On an H200: the owed H200 gate of the
# skewed GEMM tail and the README's main command (MAIN=1 scripts/session37-first.sh). Otherwise:
# H100=<script> runs scripts/<script> (default session38-split.sh: the NSA split-KV check).
set -u
if nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | grep -q H200; then
  MAIN=${MAIN:-1} bash scripts/session37-first.sh
else
  bash "scripts/${H100:-session38-split.sh}"
fi
