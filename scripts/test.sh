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
  # Side jobs still running (the build failed first) go with their children: each is a process group of its own.
  for pid in $format_pid $venv_pid; do kill -- "-$pid" 2>/dev/null || true; done
  bash scripts/check-special-files.sh || status=1
  exit "$status"
}
format_pid=""
venv_pid=""
trap after_suite EXIT
bash scripts/install-deps.sh
quick=()
if [[ "${1:-}" == "--quick" ]]; then
  quick=(--quick)
else
  # Beside the build, which keeps two cores busy only two thirds of the time (package resolution is mostly one):
  # the formatting and docs check, and the test clients' Python venv (scripts/test-venv.sh).
  setsid bash scripts/format.sh --check &
  format_pid=$!
  setsid bash scripts/test-venv.sh &
  venv_pid=$!
fi
# The tests' own build (scripts/build-tests.sh): unoptimized like a debug build, but without DEBUG and a module at a
# time, which makes the cold build and the suite each about a minute shorter on two cores.
bash scripts/build-tests.sh
# Each waited-for job is forgotten, so the trap never signals a group number the system has given out again.
if [[ -n "$format_pid" ]] && ! wait "$format_pid"; then
  format_pid=""
  echo "test.sh: the formatting or docs check failed (above); run scripts/format.sh, or fix the link it names" >&2
  exit 1
fi
format_pid=""
if [[ -n "$venv_pid" ]] && ! wait "$venv_pid"; then
  venv_pid=""
  echo "test.sh: scripts/test-venv.sh could not make the test clients' venv (pip's message is above)" >&2
  exit 1
fi
venv_pid=""
python3 scripts/run-tests.py "${quick[@]}"
