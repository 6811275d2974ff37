#!/bin/sh
# The same with xclaw: each xdotool or xclip line has its xclaw line, in the same place (docs/xdotool.md).
set -e
xterm -T notes -xrm 'XTerm*allowSendEvents: true' -e sh -c 'cat > notes.txt' &
id=$(xclaw windows --sync --name '^notes$' --ids | head -1)
xclaw activate "$id"
xclaw type 'Dear reader,'
xclaw key Return shift+h i ctrl+j
xclaw window move "$id" 100 80
xclaw window resize "$id" 640 400
if xclaw windows --name '^no such window$' >/dev/null; then echo found; else echo "no such window"; fi
printf 'copied text' | xclaw clipboard set -
xclaw clipboard get; echo
xclaw key --window "$id" ctrl+d
wait
