#!/usr/bin/env bash
# Work a real calculator by the labels on its keys: 12 × 34 on xcalc, then read the answer off the screen by OCR.
# The digits and "*" are tapped by label. xcalc draws "=" too small and thin for OCR to read, so it is found
# from its neighbour: the key right of "+/-" (a located label plus known layout, not hard-coded coordinates).
#   XCLAW=.build/release/xclaw examples/xcalc-compute.sh       (needs xcalc from x11-apps; XCLAW defaults to xclaw)
set -euo pipefail
xclaw=${XCLAW:-xclaw}
command -v "$xclaw" >/dev/null || { echo "xclaw not found: build it and set XCLAW=/path/to/xclaw" >&2; exit 2; }
command -v xcalc >/dev/null || { echo "xcalc is not installed (apt-get install x11-apps)" >&2; exit 2; }

display=$("$xclaw" display start --size 1280x800)
calc=
trap 'kill $calc 2>/dev/null || true; "$xclaw" display stop "$display" >/dev/null 2>&1 || true' EXIT
export DISPLAY=$display
echo "started a private display $display"

xcalc 2>/dev/null &
calc=$!
for _ in $(seq 200); do "$xclaw" windows | grep Calculator >/dev/null && break; sleep 0.05; done
"$xclaw" watch --text DEC --window Calculator --timeout 15 >/dev/null || { echo "FAIL: xcalc never appeared" >&2; exit 1; }

# The answer is the first line xcalc shows; `sed -n 1p` reads it all (head could cut xclaw off mid-write).
reading() { "$xclaw" ocr --window Calculator | sed -n 1p; }

for key in 1 2 '*' 3 4; do
  "$xclaw" tap "$key" --window Calculator --role button | sed 's/^/  /'
done
echo "xcalc shows $(reading) after tapping 1 2 * 3 4"

# "=" is the key right of "+/-": same size, one pixel of gap between keys.
read -r cx cy w _ < <("$xclaw" find "+/-" --window Calculator --role button |
                      sed -nE '1s/.*@([0-9]+),([0-9]+) ([0-9]+)x([0-9]+).*/\1 \2 \3 \4/p') ||
  { echo "FAIL: cannot find the \"+/-\" key" >&2; exit 1; }
"$xclaw" click $((cx + w + 1)) "$cy"
echo "  clicked \"=\" at $((cx + w + 1)),$cy (the key right of \"+/-\" @$cx,$cy)"

# Poll the display briefly: it repaints right after the click.
result=
for _ in $(seq 40); do result=$(reading); [ "$result" = 408 ] && break; sleep 0.05; done
if [ "$result" = 408 ]; then
  echo "ok: xcalc says 12 × 34 = $result"
else
  echo "FAIL: xcalc shows '$result', expected 408" >&2; exit 1
fi
