#!/usr/bin/env bash
# Makes the test clients' Python venv, .build-tests/venvs/test-clients, with the packages scripts/test-clients.txt
# names, unless it is there already with all of them. scripts/test.sh runs it beside the build, which leaves a core
# idle about a third of the time; the tests then find it made (PythonVenv.testClients: the same folder, marker and
# lock, so whichever comes first makes it and the other waits for it).
set -euo pipefail
cd "$(dirname "$0")/.."
base=.build-tests/venvs
name=test-clients
mkdir -p "$base"
exec 9>"$base/$name.lock"
flock 9
mapfile -t packages < <(grep -v '^#' scripts/test-clients.txt | grep .)
# The marker lists what was installed: a venv made from an older list gets the packages added since.
[[ -e "$base/$name/.installed" && "$(cat "$base/$name/.installed")" == "$(printf '%s\n' "${packages[@]}")" ]] && exit 0
[[ -x "$base/$name/bin/python" ]] || /usr/bin/python3 -m venv "$base/$name"
"$base/$name/bin/python" -m pip install --quiet "${packages[@]}"
printf '%s\n' "${packages[@]}" >"$base/$name/.installed"
