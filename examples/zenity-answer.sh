#!/usr/bin/env bash
# Answer a real GTK dialog by the label on its button, then check what the dialog reported.
# zenity --question exits 1 when its cancel button ("Keep") is pressed and 0 for its OK button ("Delete"),
# so its exit status proves that xclaw clicked the button it was asked to.
#   XCLAW=.build/release/xclaw examples/zenity-answer.sh        (needs zenity; XCLAW defaults to xclaw on PATH)
set -euo pipefail
xclaw=${XCLAW:-xclaw}
command -v "$xclaw" >/dev/null || { echo "xclaw not found: build it and set XCLAW=/path/to/xclaw" >&2; exit 2; }
command -v zenity >/dev/null || { echo "zenity is not installed (apt-get install zenity)" >&2; exit 2; }

display=$("$xclaw" display start --size 1280x800)
dialog=
trap 'kill $dialog 2>/dev/null || true; "$xclaw" display stop "$display" >/dev/null 2>&1 || true' EXIT
export DISPLAY=$display
echo "started a private display $display"

# answer LABEL EXPECTED-STATUS: open the dialog, tap LABEL, check zenity's exit status.
answer() {
  zenity --question --text "Delete the selected files?" --ok-label Delete --cancel-label Keep 2>/dev/null &
  dialog=$!
  "$xclaw" watch --text Keep --timeout 20 >/dev/null || { echo "FAIL: the dialog never showed \"Keep\"" >&2; return 1; }
  # "Delete" is also a word of the question, so ask for the button.
  "$xclaw" tap "$1" --role button | sed 's/^/  /'
  for _ in $(seq 100); do kill -0 "$dialog" 2>/dev/null || break; sleep 0.05; done
  local status=0
  if kill -0 "$dialog" 2>/dev/null; then echo "FAIL: the dialog is still open after tapping \"$1\"" >&2; return 1; fi
  wait "$dialog" || status=$?
  dialog=
  # The next dialog must not be mistaken for this one, so wait until its window is really gone from the screen.
  "$xclaw" watch --text Keep --gone --timeout 5 >/dev/null || { echo "FAIL: the dialog stayed on screen" >&2; return 1; }
  if [ "$status" = "$2" ]; then
    echo "tapped \"$1\": zenity exited $status as expected"
  else
    echo "FAIL: tapped \"$1\" but zenity exited $status, expected $2" >&2; return 1
  fi
}

answer Keep 1
answer Delete 0
echo "ok: both answers reached the dialog"
