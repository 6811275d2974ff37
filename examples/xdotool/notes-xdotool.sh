#!/bin/sh
# A terminal that keeps what it is sent: find it, type into it, move and resize it, use the clipboard (xdotool, xclip).
set -e
xterm -T notes -xrm 'XTerm*allowSendEvents: true' -e sh -c 'cat > notes.txt' &
id=$(xdotool search --sync --name '^notes$' | head -1)
xdotool windowactivate --sync "$id"
xdotool type 'Dear reader,'
xdotool key Return shift+h i ctrl+j
xdotool windowmove "$id" 100 80
xdotool windowsize "$id" 640 400
if xdotool search --name '^no such window$' >/dev/null; then echo found; else echo "no such window"; fi
printf 'copied text' | xclip -selection clipboard
xclip -o -selection clipboard; echo
xdotool key --window "$id" ctrl+d
wait
