#!/usr/bin/env bash
# Writes the Debian package's copyright file (machine-readable format 1.0) to stdout, for scripts/package-deb.sh:
#   scripts/deb-copyright.sh BINARY_DIR "LIBRARIES COPIED IN"
# xclaw's own sources state no license, and the file says so rather than inventing one. Linked into the binaries are
# the Swift runtime (statically by a release build, or copied in: the second argument names those libraries) and the
# Swift packages the build resolved, each listed with the version checked out beside BINARY_DIR and the license its
# LICENSE file states (Apache-2.0 or MIT today; another is written as other-NAME and the script warns).
set -euo pipefail
cd "$(dirname "$0")/.."
binaries=${1:?usage: deb-copyright.sh BINARY_DIR "LIBRARIES"}
copied=${2:-}
# The build tree holds the checkouts; BINARY_DIR is often its release symlink, so its parent is taken by name.
checkouts="$(dirname "$(cd "$binaries" && pwd -L)")/checkouts"

# Each package checked out beside the binaries: its copyright line, its license and, for MIT, the text itself.
holders=()
licenses=()
listed=()
mit=""
if [[ -d "$checkouts" ]]; then
  for dir in "$checkouts"/*/; do
    name=$(basename "$dir")
    license_file=$(ls "$dir" | grep -i -m1 '^licen[cs]e' || true)
    version=$(git -C "$dir" describe --tags --always 2>/dev/null || echo unknown)
    text=""
    [[ -n "$license_file" ]] && text=$(head -c 2000 "$dir/$license_file")
    if grep -q 'Apache License' <<<"$text" && grep -q 'Version 2.0' <<<"$text"; then
      license=Apache-2.0
    elif grep -q 'Permission is hereby granted, free of charge' <<<"$text"; then
      license="MIT-$name"
      mit+=$'\n'"License: $license"$'\n'"$(sed 's/^[[:space:]]*$/./; s/^/ /' "$dir/$license_file")"$'\n'
    else
      license="other-$name"
      echo "deb-copyright: cannot tell the license of $name from ${license_file:-its missing LICENSE}" >&2
    fi
    holders+=("the $name authors")
    listed+=("$name $version ($license)")
    [[ " ${licenses[*]} " == *" $license "* ]] || licenses+=("$license")
  done
else
  echo "deb-copyright: no checkouts beside $binaries: the Swift packages linked in are not listed" >&2
fi
expression="none-stated and Apache-2.0 with Runtime-Library exception"
for license in "${licenses[@]}"; do expression+=" and $license"; done

cat <<'TEXT'
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: xclaw
Comment: Built by scripts/package-deb.sh from the xclaw source tree.

Files: *
Copyright: the xclaw authors
License: none-stated

TEXT
echo "Files: usr/lib/xclaw/*"
echo "Copyright: the xclaw authors"
echo " 2014-2025 Apple Inc. and the Swift project authors"
for holder in "${holders[@]}"; do echo " $holder"; done
echo "License: $expression"
echo "Comment: xclaw's code with the Swift runtime, standard library, Foundation and Dispatch linked in"
if [[ -n "$copied" ]]; then echo " (here copied in as shared libraries: $copied)"; fi
echo " and the Swift packages the build resolved:"
for item in "${listed[@]}"; do echo " $item"; done
cat <<'TEXT'

License: none-stated
 The xclaw sources carry no license statement: until their authors add one, they
 grant no rights beyond what the law allows.

License: Apache-2.0
 On Debian systems the full text of the Apache License, Version 2.0 is in
 /usr/share/common-licenses/Apache-2.0.

License: Apache-2.0 with Runtime-Library exception
 On Debian systems the full text of the Apache License, Version 2.0 is in
 /usr/share/common-licenses/Apache-2.0.
 .
 Runtime Library Exception to the Apache 2.0 License: as an exception, if you use
 this Software to compile your source code and portions of this Software are
 embedded into the binary product as a result, you may redistribute such product
 without providing attribution as would otherwise be required by Sections 4(a),
 4(b) and 4(d) of the License.
TEXT
printf '%s' "$mit"
