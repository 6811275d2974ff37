#!/usr/bin/env bash
# The suite runs as root: it must leave the machine's special files (/dev/null and kin, /dev/stdout and kin) as it
# found them. A rename over /dev/null (an
# output written "atomically" onto it) once left a regular file there, and every later program broke on it.
set -euo pipefail
status=0
for node in /dev/null:1,3 /dev/zero:1,5 /dev/full:1,7 /dev/random:1,8 /dev/urandom:1,9; do
  path=${node%%:*}
  want=${node#*:}
  if [ ! -c "$path" ]; then
    echo "check-special-files: $path is no longer a character device: $(ls -l "$path" 2>&1)" >&2
    status=1
    continue
  fi
  got="$((16#$(stat -c %t "$path"))),$((16#$(stat -c %T "$path")))"
  mode=$(stat -c %a "$path")
  if [ "$got" != "$want" ] || [ "$mode" != 666 ]; then
    echo "check-special-files: $path is device $got mode $mode (want $want mode 666)" >&2
    status=1
  fi
done
for node in /dev/stdin:/proc/self/fd/0 /dev/stdout:/proc/self/fd/1 /dev/stderr:/proc/self/fd/2 /dev/fd:/proc/self/fd; do
  path=${node%%:*}
  want=${node#*:}
  if [ ! -L "$path" ] || [ "$(readlink "$path")" != "$want" ]; then
    echo "check-special-files: $path is no longer the link to $want: $(ls -ld "$path" 2>&1)" >&2
    status=1
  fi
done
# Nothing but devices, links and directories belongs in /dev: a regular file there is an output renamed into it.
strays=$(find /dev -maxdepth 1 -type f 2>/dev/null | head -5)
if [ -n "$strays" ]; then
  echo "check-special-files: regular files in /dev: $strays" >&2
  status=1
fi
[ "$status" = 0 ] && echo "check-special-files: /dev/null, zero, full, random, urandom and the std links are intact"
exit "$status"
