#!/usr/bin/env bash
# Capture one window by title, full size and scaled the way Claude sees it, and print where they went.
#   examples/capture-window.sh "Title substring" [--display :N]
set -euo pipefail
xclaw=${XCLAW:-xclaw}
title=${1:?usage: capture-window.sh TITLE [--display :N]}
shift
"$xclaw" capture --window "$title" -o "window.png" "$@"
"$xclaw" capture --window "$title" --scale-for-model -o "window-model.png" --json "$@"
