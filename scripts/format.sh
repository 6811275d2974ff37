#!/usr/bin/env bash
# Formats the Swift sources with the toolchain's swift-format and the rules in .swift-format.
#   scripts/format.sh           rewrite in place
#   scripts/format.sh --check   report what does not conform and exit 1 (CI runs this through scripts/test.sh);
#                               also checks the docs' links, anchors and tables of contents (scripts/check-docs.py)
set -euo pipefail
cd "$(dirname "$0")/.."
paths=(Sources Tests Benchmarks Package.swift)
if [[ "${1:-}" == "--check" ]]; then
  status=0
  if ! out=$(swift format lint --strict --recursive --parallel "${paths[@]}" 2>&1) || [[ -n "$out" ]]; then
    echo "$out" >&2
    echo "format: the sources above do not follow .swift-format; run scripts/format.sh to fix them" >&2
    status=1
  else
    echo "format: every source follows .swift-format" >&2
  fi
  # A broken link or anchor in README.md or docs/ fails CI like a formatting finding (it prints what and where).
  python3 scripts/check-docs.py || status=1
  exit "$status"
else
  swift format format --in-place --recursive --parallel "${paths[@]}"
fi
