#!/usr/bin/env bash
# Wait for a word to appear in a terminal instead of sleeping: a "build" in an xterm prints BUILD FINISHED
# after about 2 s, and `xclaw watch --text` returns as soon as it can read it (OCR runs only when pixels change).
#   XCLAW=.build/release/xclaw examples/wait-for-terminal.sh     (needs xterm; XCLAW defaults to xclaw on PATH)
set -euo pipefail
xclaw=${XCLAW:-xclaw}
command -v "$xclaw" >/dev/null || { echo "xclaw not found: build it and set XCLAW=/path/to/xclaw" >&2; exit 2; }
command -v xterm >/dev/null || { echo "xterm is not installed (apt-get install xterm)" >&2; exit 2; }

display=$("$xclaw" display start --size 1280x800)
term=
trap 'kill $term 2>/dev/null || true; "$xclaw" display stop "$display" >/dev/null 2>&1 || true' EXIT
export DISPLAY=$display
echo "started a private display $display"

ms() { echo $(( $(date +%s%N) / 1000000 )); }
start=$(ms)
xterm -geometry 80x24+20+20 -title build -e sh -c 'echo building...; sleep 2; echo BUILD FINISHED; sleep 30' &
term=$!
echo "opened an xterm running a 2 s build; watching for FINISHED"

# watch exits 0 as soon as the word is readable, 1 at the timeout.
if ! "$xclaw" watch --text FINISHED --timeout 15 | sed 's/^/  /'; then
  echo "FAIL: FINISHED did not appear within 15 s" >&2; exit 1
fi
took=$(( $(ms) - start ))
echo "ok: FINISHED appeared $took ms after the xterm was started"
# The word cannot be on screen before the 2 s sleep ends; an earlier match would be a false positive.
if [ "$took" -lt 2000 ]; then echo "FAIL: seen after $took ms, before the build could have finished" >&2; exit 1; fi
