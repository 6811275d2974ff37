#!/usr/bin/env bash
# Installs an xclaw .deb with apt into a throwaway copy of this system, checks what it installed, runs the demo
# against it, purges it and lists what was left behind; the real /usr, /etc and /var are never written.
#
#   sudo scripts/try-deb.sh [--demo] [--results DIR] dist/xclaw_VERSION_ARCH.deb
#
# How: a private mount namespace (unshare) in which /usr, /etc and /var are overlays whose writable layers live on
# a tmpfs that goes with the namespace, and the Swift toolchain's runtime directory is hidden under an empty tmpfs,
# so the installed binaries run as on a machine without Swift. apt-get installs the package from the file (its
# Depends and Recommends must be installed already; nothing is downloaded when they are). Then:
#   files        dpkg -L xclaw                        ldd          ldd of every ELF file in /usr/lib/xclaw
#   version      xclaw --version                      man          man -w xclaw xclaw-window-resize
#   complete     complete -p xclaw, after sourcing the bash completion
#   unit         what systemd-analyze verify --user says of the unit (nothing when it is sound)
#   apt-install  apt-get's output                     demo.out, demo.status   with --demo: examples/demo.sh as
#                                                     installed, run with XCLAW=/usr/bin/xclaw
#   purge        apt-get purge's output               left         after the purge, every path in a writable
#                                                     layer that is not a directory the system already had
#   left-package the lines of `left` the package installed; left-other those outside dpkg's, apt's and man-db's
#                state (/var/lib/dpkg, /var/lib/apt, /var/cache, /var/log, /etc/ld.so.cache)
# are written to the results directory (default: a new one under $TMPDIR, printed at the end).
# Exit status: 0 installed, checked and purged cleanly; 1 a step failed or something was left behind (the results
# say which); 2 bad usage or not root.
set -euo pipefail

inside=0
demo=0
results=""
deb=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --inside) inside=1; shift ;;
    --demo) demo=1; shift ;;
    --results) results=${2:?--results needs a directory}; shift 2 ;;
    -h | --help) sed -n '2,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    -*) echo "try-deb: unknown option $1" >&2; exit 2 ;;
    *) [[ -z "$deb" ]] || { echo "try-deb: one .deb at a time" >&2; exit 2; }; deb=$1; shift ;;
  esac
done
[[ -n "$deb" && -f "$deb" ]] || { echo "try-deb: usage: try-deb.sh [--demo] [--results DIR] FILE.deb" >&2; exit 2; }
deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")

if [[ $inside == 0 ]]; then
  [[ $(id -u) == 0 ]] || { echo "try-deb: run it as root (it mounts, in a namespace of its own)" >&2; exit 2; }
  results=${results:-$(mktemp -d "${TMPDIR:-/tmp}/xclaw-try-deb.XXXXXX")}
  mkdir -p "$results"
  results=$(cd "$results" && pwd)
  case "$results/" in /usr/* | /etc/* | /var/*)
    echo "try-deb: the results directory must lie outside /usr, /etc and /var (set TMPDIR or --results)" >&2
    exit 2 ;;
  esac
  flags=(--inside --results "$results")
  [[ $demo == 1 ]] && flags+=(--demo)
  status=0
  unshare --mount --propagation private bash "$0" "${flags[@]}" "$deb" || status=$?
  echo "try-deb: results in $results" >&2
  exit "$status"
fi

# In the namespace from here on: whatever is mounted goes when the last process in it ends.
layers="$results/layers"
mkdir -p "$layers"
mount -t tmpfs -o mode=0700 tmpfs "$layers"
for dir in usr etc var; do
  mkdir -p "$layers/$dir/upper" "$layers/$dir/work" "$layers/lower/$dir"
  # The real tree stays visible beside the overlay, to tell what the package made from what was there.
  mount --bind "/$dir" "$layers/lower/$dir"
  mount -t overlay overlay -o "lowerdir=/$dir,upperdir=$layers/$dir/upper,workdir=$layers/$dir/work" "/$dir"
done
# The Swift toolchain's runtime libraries, wherever `swift` comes from, are hidden: the package must bring what it
# needs or have it linked in.
if swift=$(command -v swift 2>/dev/null); then
  runtime="$(dirname "$(dirname "$(readlink -f "$swift")")")/lib/swift"
  if [[ -d "$runtime" ]]; then mount -t tmpfs -o ro,mode=0755 tmpfs "$runtime"; fi
  echo "$runtime" >"$results/hidden"
fi

fail=0
step() { echo "try-deb: $*" >&2; }
step "apt-get install $deb"
if ! DEBIAN_FRONTEND=noninteractive apt-get install -y "$deb" >"$results/apt-install" 2>&1; then
  step "apt-get install failed:"
  cat "$results/apt-install" >&2
  exit 1
fi
dpkg -L xclaw >"$results/files"
for file in /usr/lib/xclaw/*; do
  if [[ -f "$file" ]] && head -c 4 "$file" | grep -q 'ELF'; then
    echo "== $file"
    ldd "$file" 2>&1 || true
  fi
done >"$results/ldd"
/usr/bin/xclaw --version >"$results/version" 2>&1 || fail=1
man -w xclaw xclaw-window-resize >"$results/man" 2>&1 || fail=1
bash -c 'source /usr/share/bash-completion/completions/xclaw && complete -p xclaw' >"$results/complete" 2>&1 || fail=1
# The user unit as systemd reads it (its ExecStart must exist); a runtime directory of its own, on the tmpfs.
if command -v systemd-analyze >/dev/null; then
  mkdir -m 0700 "$layers/run"
  XDG_RUNTIME_DIR="$layers/run" systemd-analyze verify --user /usr/lib/systemd/user/xclaw.service \
    >"$results/unit" 2>&1 || fail=1
else
  echo "no systemd-analyze" >"$results/unit"
fi
if [[ $demo == 1 ]]; then
  step "running /usr/share/doc/xclaw/examples/demo.sh with XCLAW=/usr/bin/xclaw"
  demo_status=0
  XCLAW=/usr/bin/xclaw bash /usr/share/doc/xclaw/examples/demo.sh >"$results/demo.out" 2>&1 </dev/null ||
    demo_status=$?
  echo "$demo_status" >"$results/demo.status"
  [[ $demo_status == 0 ]] || fail=1
fi
step "apt-get purge xclaw"
DEBIAN_FRONTEND=noninteractive apt-get purge -y xclaw >"$results/purge" 2>&1 || fail=1

# What the writable layers still hold: files and links of any kind, and directories the real tree lacks.
for dir in usr etc var; do
  (cd "$layers/$dir/upper" && find . -mindepth 1 | sort) | while read -r entry; do
    path="/$dir/${entry#./}"
    if [[ -d "$layers/$dir/upper/$entry" && ! -L "$layers/$dir/upper/$entry" && -d "$layers/lower/$dir/$entry" ]]; then
      continue
    fi
    echo "$path"
  done
done >"$results/left"
grep -Fxf "$results/files" "$results/left" >"$results/left-package" || true
grep -Ev '^/var/(lib/dpkg|lib/apt|cache|log)(/|$)|^/etc/ld\.so\.cache$' "$results/left" >"$results/left-other" || true
if [[ -s "$results/left-package" || -s "$results/left-other" ]]; then
  step "left behind after the purge:"
  cat "$results/left-package" "$results/left-other" >&2
  fail=1
fi
exit "$fail"
