#!/usr/bin/env bash
# Installs what the tests need (idempotent), checks the formatting (.swift-format), and runs the whole suite against
# real Xvfb servers it starts itself, with the command-line tests again through a daemon beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/format.sh --check
swift build --build-tests
# The command-line tests once more with every command handed to a daemon (XclawTesting's DaemonMode starts one per
# state directory): the same assertions, so the same bytes and exit codes as in-process. That pass runs beside the
# in-process one, from the test binary itself (SwiftPM holds a lock on .build for one command at a time): the suite
# mostly waits on X servers and processes (it keeps about 40% of 2 cores busy), so the two overlap instead of adding
# up. Its default state, data and config directories are its own, so neither pass's daemons serve the other's
# commands. DaemonCLITests, ScheduleCLITests and the web view's tests manage their daemons themselves, and the MCP
# tests start their own servers: the first pass runs them.
tests=$(ls -d .build/debug/*PackageTests.xctest | head -1)
classes=$("$tests" --list-tests | sed -n 's|^XclawCLITests\.\([A-Za-z0-9_]*\)/.*|\1|p' | sort -u \
  | grep -vxE 'DaemonCLITests|ScheduleCLITests|WebViewCLITests|WebAPICLITests|MCPServerCLITests' \
  | sed 's/^/XclawCLITests./' | paste -sd, -)
pass=$(mktemp -d /tmp/xclaw-daemon-pass.XXXXXX)
mkdir -m 700 "$pass/runtime"
(
  export XCLAW_TEST_DAEMON=1 XDG_RUNTIME_DIR="$pass/runtime" XDG_DATA_HOME="$pass/data" XDG_STATE_HOME="$pass/state"
  export XDG_CONFIG_HOME="$pass/config"
  "$tests" "$classes" > "$pass/log" 2>&1
) &
daemon_pass=$!
status=0
swift test --skip-build || status=$?
second=0
wait "$daemon_pass" || second=$?
echo "== the command-line tests through a daemon (beside the run above) =="
cat "$pass/log"
rm -rf "$pass"
if [ "$status" -ne 0 ] || [ "$second" -ne 0 ]; then
  echo "failed: in-process pass exit $status, daemon pass exit $second" >&2
  exit 1
fi
