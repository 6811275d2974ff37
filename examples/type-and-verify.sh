#!/usr/bin/env bash
# Type arbitrary Unicode into a real terminal on a private display and check it arrived byte for byte.
#   XCLAW=.build/release/xclaw examples/type-and-verify.sh 'any text ✓ 你好'
set -euo pipefail
xclaw=${XCLAW:-xclaw}
text=${1:-"héllo wörld ß € ñ 你好 — ✓"}
file=$(mktemp)
display=$("$xclaw" display start --size 1024x768)
trap '"$xclaw" display stop "$display"; rm -f "$file"' EXIT
DISPLAY=$display LC_ALL=C.UTF-8 xterm -title typing-target -e sh -c "cat > '$file'" &
until "$xclaw" windows --display "$display" | grep -q typing-target; do sleep 0.05; done
"$xclaw" activate typing-target --display "$display" >/dev/null
sleep 0.2
printf '%s\n' "$text" | "$xclaw" type - --display "$display"
"$xclaw" key ctrl+d --display "$display"
wait
if [ "$(cat "$file")" = "$text" ]; then echo "exact: $text"; else echo "mismatch: $(cat "$file")" >&2; exit 1; fi
