#!/usr/bin/env bash
# Release build + benchmarks on a private 1920x1080 Xvfb, with scrot, xdotool, the tesseract CLI and PyAutoGUI measured side by side,
# and snapshots of GTK, Qt and xterm windows with and without their accessibility trees.
#   scripts/bench.sh [--json]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --bench
# The benchmarks are their own binary (Benchmarks/xclaw-bench); the CLI rows time the xclaw binary beside it.
for product in xclaw xclaw-core xclaw-atspi xclaw-bench; do
  swift build -c release --product "$product" 2>&1 | tail -1 >&2
done
for bench in capture input ocr step agents snapshot cli image grounding replay batch context mcp web python services; do
  .build/release/xclaw-bench "$bench" "$@"
done
