#!/usr/bin/env bash
# Installs what the tests need (idempotent), checks the formatting (.swift-format), builds, and runs the suite against
# real Xvfb servers it starts itself, in parallel shards (scripts/run-tests.py): every test class in-process, and
# the CLI classes about what the daemon serves differently once more through a daemon.
# `--quick` (the edit loop): no formatting check, no X-heavy command-line or real-app suites, no daemon pass.
set -euo pipefail
cd "$(dirname "$0")/.."
# The suite runs as root: /dev/null and its kin must come out of it as they went in (an output renamed over
# /dev/null once made it a regular file, and every later program broke). Checked on every exit, a failed one too.
after_suite() {
  local status=$?
  local pids
  pids=$(jobs -p)
  [[ -n "$pids" ]] && kill $pids 2>/dev/null
  bash scripts/check-special-files.sh || status=1
  exit "$status"
}
trap after_suite EXIT
bash scripts/install-deps.sh
quick=()
side=()
if [[ "${1:-}" == "--quick" ]]; then
  quick=(--quick)
else
  # Beside the build, which keeps two cores busy only two thirds of the time (package resolution is mostly one):
  # the formatting check, and the test clients' Python venv (scripts/test-venv.sh).
  bash scripts/format.sh --check &
  side+=($!)
  bash scripts/test-venv.sh &
  side+=($!)
fi
# The tests' own build (scripts/build-tests.sh): unoptimized like a debug build, but without DEBUG and a module at a
# time, which makes the cold build and the suite each about a minute shorter on two cores.
bash scripts/build-tests.sh
for pid in "${side[@]}"; do wait "$pid"; done
python3 scripts/run-tests.py "${quick[@]}"
