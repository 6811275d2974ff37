#!/usr/bin/env bash
# Installs what the tests need (idempotent), checks the formatting (.swift-format), and runs the whole suite against
# real Xvfb servers it starts itself.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/format.sh --check
swift build --build-tests
swift test
