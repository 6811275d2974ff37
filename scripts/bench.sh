#!/usr/bin/env bash
# Release build + benchmarks on a private 1920x1080 Xvfb, with scrot, xdotool and the tesseract CLI measured side by side,
# and snapshots of GTK, Qt and xterm windows with and without their accessibility trees.
#   scripts/bench.sh [--json]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --bench
swift build -c release --product xclaw 2>&1 | tail -1 >&2
swift build -c release --product xclaw-atspi 2>&1 | tail -1 >&2
.build/release/xclaw bench capture "$@"
.build/release/xclaw bench input "$@"
.build/release/xclaw bench ocr "$@"
.build/release/xclaw bench step "$@"
.build/release/xclaw bench agents "$@"
.build/release/xclaw bench snapshot "$@"
