#!/usr/bin/env bash
# xclaw demo: on its own headless display (with an accessibility bus), open a real terminal, type into it, click,
# capture, read the screen by OCR, snapshot a GTK dialog from its accessibility tree next to the terminal read by OCR,
# answer the dialog by its button's label, then let the agent loop (`xclaw run`) answer another dialog, driven by a
# scripted model on a loopback Messages API (no API key needed), its "Delete" held for approval until
# `xclaw approve`, and check every result.
# In the source tree it installs what it shows (idempotent: scripts/install-deps.sh --demo) and builds what it runs on
# first run. With XCLAW=/path/to/xclaw, or outside the source tree (the package's copy,
# /usr/share/doc/xclaw/examples/demo.sh), it runs an installed xclaw instead (`xclaw` on PATH unless XCLAW names one),
# with the xclaw-mock-api installed beside the binary it resolves to (/usr/lib/xclaw) unless XCLAW_MOCK_API names one.
# Leaves nothing running.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${XCLAW:-}" ] && [ -f Package.swift ]; then
  bash scripts/install-deps.sh --demo
  # xclaw is the small front binary; xclaw-core, beside it, runs every command it does not do itself; xclaw-atspi
  # reads accessibility trees; xclaw-mock-api plays the scripted model. Only these four are built (not the tests,
  # fixtures or benchmarks), unoptimized and a module at a time, into the tests' build tree with the tests' flags
  # (scripts/build-tests.sh): a few minutes from cold instead of a release build's eight, and README command 2 then
  # builds only the rest. `swift build -c release` makes the optimized binaries for daily use.
  for product in xclaw xclaw-core xclaw-atspi xclaw-mock-api; do
    echo "demo: building $product (the first build takes a few minutes)…" >&2
    bash scripts/build-tests.sh --product "$product" 2>&1 \
      | grep --line-buffered -E '^\[[0-9]+/[0-9]+\] (Compiling|Linking)|error|Build' \
      | sed -u -E 's/^(\[[0-9]+\/[0-9]+\] (Compiling|Linking) [^ ]+).*/\1/; s/^/   /' >&2
  done
  xclaw=".build-tests/release/xclaw"
  mockapi=".build-tests/release/xclaw-mock-api"
else
  xclaw=$(command -v "${XCLAW:-xclaw}") || { echo "demo: no xclaw on PATH: install it or set XCLAW=/path/to/xclaw" >&2; exit 2; }
  mockapi=${XCLAW_MOCK_API:-$(dirname "$(readlink -f "$xclaw")")/xclaw-mock-api}
  [ -x "$mockapi" ] || { echo "demo: no $mockapi: set XCLAW_MOCK_API=/path/to/xclaw-mock-api" >&2; exit 2; }
  echo "demo: running $xclaw" >&2
fi
out="$(mktemp -d "${TMPDIR:-/tmp}/xclaw-demo.XXXXXX")"
# The first command the daemon serves starts one (fast by default; it says so once): in a state directory of the
# demo's own, so it is stopped with the demo and leaves nothing running.
export XCLAW_STATE_DIR="$out/state"
stop_all() {
  "$xclaw" display stop "$display" >/dev/null 2>&1 || true
  "$xclaw" daemon stop >/dev/null 2>&1 || true
}

display=$("$xclaw" display start --size 1920x1080 --accessibility)
trap stop_all EXIT
eval "$("$xclaw" display env "$display")"   # DISPLAY and the session bus, for the apps started below
echo "1. started a private Xvfb on $display (1920x1080) with a session bus and an accessibility bus"

DISPLAY="$display" LC_ALL=C.UTF-8 xterm -geometry 90x20+40+40 -fa 'DejaVu Sans Mono' -fs 13 -title "xclaw demo" \
  -e sh -c "cd '$out' && exec sh -i" >/dev/null 2>&1 &
for _ in $(seq 100); do
  "$xclaw" windows --display "$display" | grep -q "xclaw demo" && break
  sleep 0.05
done
echo "2. opened xterm:"
"$xclaw" windows --display "$display" | sed 's/^/     /'

"$xclaw" activate "xclaw demo" --display "$display" >/dev/null
"$xclaw" click 400 200 --display "$display"
echo "3. activated it and clicked inside it at 400,200"
sleep 0.3   # the shell prints its prompt

text='Héllo from xclaw ✓ — ünïcödé, 你好, €5'
"$xclaw" type "printf '%s\\n' '$text' | tee typed.txt" --display "$display"
"$xclaw" key Return --display "$display"
echo "4. typed a command containing \"$text\" and pressed Return"

for _ in $(seq 100); do [ -s "$out/typed.txt" ] && break; sleep 0.05; done
sleep 0.2
shot="$out/screen.png"
"$xclaw" capture --display "$display" -o "$shot" >/dev/null
"$xclaw" capture --display "$display" --window "xclaw demo" -o "$out/window.png" >/dev/null
"$xclaw" capture --display "$display" --scale-for-model -o "$out/for-model.png" --json | sed 's/^/     /'
echo "5. captured the screen, the xterm window and a model-sized copy"

got=$(cat "$out/typed.txt" 2>/dev/null || true)
if [ "$got" = "$text" ]; then
  echo "6. the shell received exactly what was typed: $got"
else
  echo "6. MISMATCH: the shell received '$got', expected '$text'" >&2
  exit 1
fi

# Perception: read the terminal back, then answer a dialog by the label of its button.
"$xclaw" watch --text "from xclaw" --window "xclaw demo" --timeout 10 --display "$display" >/dev/null
echo "7. OCR reads the terminal:"
"$xclaw" ocr --window "xclaw demo" --display "$display" | sed 's/^/     /'
# English alone drops the accents; with the Latin-script languages on, the typed words read back exactly.
latin=$("$xclaw" ocr --lang eng+deu+fra --window "xclaw demo" --display "$display")
if printf '%s' "$latin" | grep -qF 'Héllo from xclaw' && printf '%s' "$latin" | grep -qF 'ünïcödé'; then
  echo "   and with --lang eng+deu+fra, \"Héllo from xclaw\" and \"ünïcödé\" exactly:"
  printf '%s\n' "$latin" | sed -n 1p | sed 's/^/     /'
else
  echo "7. MISMATCH: with --lang eng+deu+fra OCR read:" >&2
  printf '%s\n' "$latin" | sed 's/^/     /' >&2
  exit 1
fi
DISPLAY="$display" zenity --question --text "Delete the selected files?" --ok-label Delete --cancel-label Keep \
  >/dev/null 2>&1 &
dialog=$!
"$xclaw" watch --text "Keep" --timeout 15 --display "$display" >/dev/null
"$xclaw" wait-stable --ms 200 --display "$display" >/dev/null
echo "8. a zenity dialog opened over the terminal; one snapshot, the dialog from its accessibility tree [atspi],"
echo "   the terminal by OCR [ocr]:"
"$xclaw" snapshot --interactive --display "$display" | sed 's/^/     /'
echo "   the dialog's raw accessibility tree:"
"$xclaw" tree --window Question --display "$display" | sed 's/^/     /'
"$xclaw" tap Keep --role button --display "$display" | sed 's/^/     /'
status=0; wait "$dialog" || status=$?
if [ "$status" = 1 ]; then
  echo "9. tapped \"Keep\" by its label: zenity exited 1, its answer for Keep"
else
  echo "9. MISMATCH: zenity exited $status after tapping Keep (expected 1)" >&2
  exit 1
fi

# The agent loop: `xclaw run` streams the model's text, runs the tools it calls and answers each call. The "model"
# here is examples/agent/answer-dialog.json replayed by xclaw-mock-api in the Messages API's exact wire format; with
# a real key (ANTHROPIC_API_KEY) and no ANTHROPIC_BASE_URL the same command asks Claude.
DISPLAY="$display" zenity --question --text "Delete the selected files?" --ok-label Delete --cancel-label Keep \
  >/dev/null 2>&1 &
dialog=$!
"$xclaw" watch --text "Keep" --timeout 15 --display "$display" >/dev/null
"$mockapi" --script examples/agent/answer-dialog.json >"$out/mock-api.url" 2>"$out/mock-api.log" &
mock=$!
trap 'kill $mock 2>/dev/null || true; stop_all' EXIT
for _ in $(seq 100); do [ -s "$out/mock-api.url" ] && break; sleep 0.05; done
echo "10. xclaw run with a scripted model at $(head -1 "$out/mock-api.url"):"
# Pressing "Delete" needs a person's approval. Run without a terminal (setsid), as a scheduled run would be, the run
# waits with status needs-approval until `xclaw approve` (in a terminal it would ask y/N instead).
ANTHROPIC_BASE_URL="$(head -1 "$out/mock-api.url")" ANTHROPIC_API_KEY=demo-key-not-secret \
  setsid "$xclaw" run "Press Delete in the dialog" --display "$display" --tools computer,screen_snapshot,tap_element \
  --log "$out/actions.jsonl" >"$out/run.out" 2>"$out/run.log" </dev/null &
run=$!
waiting=""
for _ in $(seq 300); do
  waiting=$("$xclaw" runs --json | python3 -c \
    'import json, sys; r = [x["id"] for x in json.load(sys.stdin) if x["status"] == "needs-approval"]; print(r[-1] if r else "")')
  [ -n "$waiting" ] && break
  sleep 0.1
done
if [ -z "$waiting" ]; then
  echo "11. MISMATCH: the run never waited for approval to press Delete" >&2
  sed 's/^/     /' "$out/run.log" >&2
  exit 1
fi
echo "11. run $waiting waits for approval to press Delete (status needs-approval); approving it:"
"$xclaw" approve "$waiting" | sed 's/^/     /'
wait "$run"
sed 's/^/     model: /' "$out/run.out"
sed 's/^/     /' "$out/run.log"
status=0; wait "$dialog" || status=$?
if [ "$status" = 0 ]; then
  echo "12. the agent pressed \"Delete\": zenity exited 0; its action log:"
  sed 's/^/     /' "$out/actions.jsonl"
else
  echo "12. MISMATCH: zenity exited $status after the agent run (expected 0)" >&2
  exit 1
fi
echo
echo "screenshot: $shot"
echo "window:     $out/window.png"
echo "for model:  $out/for-model.png"
