#!/usr/bin/env bash
# Builds xclaw_VERSION-REVISION_ARCH.deb: the binaries, man pages generated from the commands (scripts/gen-man.py),
# bash/zsh/fish completions, the daemon's systemd user unit, the docs and examples, with Depends from the shared
# libraries the binaries need (dpkg-shlibdeps) plus the OCR data.
#
#   scripts/package-deb.sh                  release build with the Swift runtime linked in (--static-swift-stdlib,
#                                           in .build-deb), so the package needs no Swift toolchain; the .deb goes
#                                           to ./dist
#   scripts/package-deb.sh --from DIR       package the binaries already in DIR (xclaw, xclaw-core, xclaw-atspi,
#                                           xclaw-mock-api) instead of building
#     --bundle-swift-runtime                with --from: binaries that link the Swift runtime dynamically (a test
#                                           build) get its libraries from the toolchain copied into /usr/lib/xclaw,
#                                           found there through their $ORIGIN runpath; without it such binaries are
#                                           refused. The tests package their build so (DebianPackageTests).
#     --out DIR                             where the .deb goes (default: dist)
#     --compression xz|gzip|zstd|none       dpkg-deb's compression (default xz)
#     --revision N                          the Debian revision (default 1)
#
# The layout (the same whatever the binaries' origin):
#   /usr/bin/xclaw -> ../lib/xclaw/xclaw      the front, on PATH; it runs xclaw-core from its own (resolved)
#   /usr/lib/xclaw/xclaw-core, xclaw-atspi    directory, and xclaw-core finds xclaw-atspi there too
#   /usr/lib/xclaw/xclaw-mock-api             the loopback Messages API the demo's scripted model talks to
#   /usr/share/man/man1/xclaw*.1.gz, the completions, /usr/lib/systemd/user/xclaw.service, /usr/share/doc/xclaw/
# xclaw-bench is left out: the benchmarks compare against peers (scrot, xdotool, the tesseract CLI, a PyAutoGUI venv)
# and the test fixture, which are a developer's checkout, not an installed tool's.
#
# Exit status: 0 built (the .deb's path on stdout), 1 a step failed, 2 bad usage.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '2,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
die() {
  echo "package-deb: $*" >&2
  exit 1
}

from=""
bundle=0
out=dist
compression=xz
revision=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --from) from=${2:?--from needs a directory}; shift 2 ;;
    --bundle-swift-runtime) bundle=1; shift ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --compression) compression=${2:?--compression needs xz, gzip, zstd or none}; shift 2 ;;
    --revision) revision=${2:?--revision needs a number}; shift 2 ;;
    -h | --help) usage ;;
    *) echo "package-deb: unknown argument $1" >&2; usage ;;
  esac
done
case "$compression" in xz | gzip | zstd | none) ;; *) echo "package-deb: --compression xz|gzip|zstd|none" >&2; exit 2 ;; esac
[[ "$revision" =~ ^[0-9][0-9a-z.+~]*$ ]] || { echo "package-deb: --revision: a Debian revision, e.g. 1" >&2; exit 2; }
[[ $bundle == 1 && -z "$from" ]] && { echo "package-deb: --bundle-swift-runtime goes with --from" >&2; exit 2; }
for tool in dpkg-deb dpkg-shlibdeps readelf strip gzip python3; do
  command -v "$tool" >/dev/null || die "$tool is missing (apt-get install dpkg-dev binutils gzip python3)"
done

binaries=(xclaw xclaw-core xclaw-atspi xclaw-mock-api)
if [[ -z "$from" ]]; then
  # Each product on its own: `swift build` of the whole package would also build the benchmarks and the test tools.
  # A tree of its own, .build-deb: in .build, which the demo builds without --static-swift-stdlib, each switch
  # recompiled xclaw-core (280 s measured on two cores).
  echo "package-deb: release build with the Swift runtime linked in, in .build-deb (minutes on a cold tree)…" >&2
  for product in "${binaries[@]}"; do
    swift build -c release --static-swift-stdlib --scratch-path .build-deb --product "$product" >&2 ||
      die "swift build of $product failed"
  done
  from=.build-deb/release
fi
from=$(cd "$from" && pwd) || die "no directory $from"
for binary in "${binaries[@]}"; do
  [[ -x "$from/$binary" ]] || die "$from/$binary is missing: build it (swift build -c release --product $binary)"
done

version=$("$from/xclaw-core" --version) || die "$from/xclaw-core --version failed"
[[ "$version" =~ ^[0-9][0-9A-Za-z.+~-]*$ ]] || die "xclaw-core --version printed '$version', not a version"
arch=$(dpkg --print-architecture)
package_version="$version-$revision"
# Reproducible dates: the commit's time, unless the caller set one.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
maintainer=${DEBFULLNAME:+$DEBFULLNAME <${DEBEMAIL:-}>}
maintainer=${maintainer:-$(git log -1 --format='%an <%ae>' 2>/dev/null || echo "xclaw maintainers <xclaw@localhost>")}

work=$(mktemp -d "${TMPDIR:-/tmp}/xclaw-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
root="$work/root"
lib="$root/usr/lib/xclaw"
doc="$root/usr/share/doc/xclaw"
install -d "$root/DEBIAN" "$root/usr/bin" "$lib" "$root/usr/share/man/man1" "$doc"

# Binaries: stripped copies (the symbol tables only; what the runtime reads stays).
for binary in "${binaries[@]}"; do
  install -m 0755 "$from/$binary" "$lib/$binary"
  strip --strip-unneeded "$lib/$binary"
done
ln -s ../lib/xclaw/xclaw "$root/usr/bin/xclaw"

# The Swift runtime: linked in by a release build; a dynamically linked build is refused or gets it copied in.
dynamic=()
for binary in "${binaries[@]}"; do
  if readelf -d "$lib/$binary" | grep -q 'NEEDED.*\[libswiftCore\.so\]'; then dynamic+=("$binary"); fi
done
if [[ ${#dynamic[@]} -gt 0 ]]; then
  if [[ $bundle == 0 ]]; then
    die "${dynamic[*]} link the Swift runtime dynamically, so the package would need a Swift toolchain: build with" \
      "--static-swift-stdlib (this script without --from does), or pass --bundle-swift-runtime to copy it in"
  fi
  # The runtime's directory is where libswiftCore.so resolves; every library ldd finds there is copied.
  runtime=$(ldd "$from/${dynamic[0]}" | awk '$1 == "libswiftCore.so" { print $3 }')
  [[ -n "$runtime" ]] || die "ldd cannot find libswiftCore.so for $from/${dynamic[0]}"
  runtime_dir=$(dirname "$runtime")
  copied=0
  for binary in "${dynamic[@]}"; do
    for path in $(ldd "$from/$binary" | awk '$3 ~ /^\// { print $3 }'); do
      if [[ "$(dirname "$path")" == "$runtime_dir" && ! -e "$lib/$(basename "$path")" ]]; then
        install -m 0644 "$path" "$lib/"
        strip --strip-unneeded "$lib/$(basename "$path")"
        copied=$((copied + 1))
      fi
    done
  done
  for binary in "${dynamic[@]}"; do
    readelf -d "$lib/$binary" | grep -q 'R.*PATH.*\$ORIGIN' ||
      die "$binary has no \$ORIGIN in its runpath, so it would not find the runtime copied beside it"
  done
  echo "package-deb: copied $copied Swift runtime libraries from $runtime_dir into /usr/lib/xclaw (${dynamic[*]}" \
    "link it dynamically); a release package links it in instead" >&2
fi

# Man pages and completions, from the binary's own command tree.
python3 scripts/gen-man.py --core "$lib/xclaw-core" --version "$version" --out "$work/man" >&2
for page in "$work/man"/*.1; do
  gzip -9n <"$page" >"$root/usr/share/man/man1/$(basename "$page").gz"
done
install -d "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
  "$root/usr/share/fish/vendor_completions.d"
# The bash one loses its #! line: bash-completion sources it, nothing runs it.
"$lib/xclaw-core" --generate-completion-script bash | sed '1{/^#!/d}' >"$root/usr/share/bash-completion/completions/xclaw"
"$lib/xclaw-core" --generate-completion-script zsh >"$root/usr/share/zsh/vendor-completions/_xclaw"
"$lib/xclaw-core" --generate-completion-script fish >"$root/usr/share/fish/vendor_completions.d/xclaw.fish"
grep -q 'complete .*-F _xclaw xclaw$' "$root/usr/share/bash-completion/completions/xclaw" ||
  die "the bash completion does not complete the command xclaw (the root command's name changed?)"
if grep -l 'xclaw-core' "$root"/usr/share/{bash-completion,zsh,fish} -r; then
  die "a completion script names xclaw-core: users type xclaw"
fi

# The daemon as a systemd user unit, run from /usr/bin; the example's comment about copying it is replaced.
install -d "$root/usr/lib/systemd/user"
{
  echo "# The xclaw daemon as a systemd user service (from the xclaw package):"
  echo "#   systemctl --user daemon-reload && systemctl --user enable --now xclaw"
  echo "# \`xclaw daemon status\` shows it; SIGTERM stops it cleanly."
  grep -v '^#' examples/systemd/xclaw.service | sed 's|^ExecStart=%h/.local/bin/xclaw |ExecStart=/usr/bin/xclaw |'
} >"$root/usr/lib/systemd/user/xclaw.service"
grep -q '^ExecStart=/usr/bin/xclaw daemon run$' "$root/usr/lib/systemd/user/xclaw.service" ||
  die "examples/systemd/xclaw.service's ExecStart is no longer %h/.local/bin/xclaw daemon run: update this script"

# Docs: the README and docs/*.md (compressed, as policy asks of docs over 4 kB), the JSON output schemas and the
# examples as they are (tools and shells read them), the fleet worker's system unit among the examples with the
# installed path.
gzip -9n <README.md >"$doc/README.md.gz"
for page in docs/*.md; do
  [[ -e "$page" ]] || continue
  install -d "$doc/docs"
  gzip -9n <"$page" >"$doc/docs/$(basename "$page").gz"
done
install -d "$doc/json"
install -m 0644 docs/json/*.json "$doc/json/"
cp -r examples "$doc/examples"
find "$doc/examples" -type f -exec chmod 0644 {} + -o -type d -exec chmod 0755 {} +
sed 's|/usr/local/bin/|/usr/bin/|g' deploy/systemd/xclaw-worker.service >"$doc/examples/systemd/xclaw-worker.service"
{
  echo "xclaw ($package_version) unstable; urgency=medium"
  echo
  echo "  * xclaw $version, built from commit $commit by scripts/package-deb.sh."
  echo
  echo " -- $maintainer  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$doc/changelog.Debian.gz"
bash scripts/deb-copyright.sh "$from" "$(ls "$lib" | grep '\.so' | tr '\n' ' ')" >"$doc/copyright"

# Control: Depends from the libraries the binaries and any copied runtime need, found in this tree first.
shlib_targets=("$lib"/xclaw "$lib"/xclaw-core "$lib"/xclaw-atspi "$lib"/xclaw-mock-api)
for library in "$lib"/*.so*; do [[ -e "$library" ]] && shlib_targets+=("$library"); done
install -d "$work/debian"
printf 'Source: xclaw\n\nPackage: xclaw\nArchitecture: any\n' >"$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O -l"$lib" "${shlib_targets[@]/#/-e}" 2> >(grep -v "useless dependency\|\$ORIGIN is used\|can't extract name and version" >&2)) ||
  die "dpkg-shlibdeps failed (above)"
depends=${shlibs#shlibs:Depends=}
[[ -n "$depends" && "$depends" != "$shlibs" ]] || die "dpkg-shlibdeps printed no Depends: '$shlibs'"
if grep -q 'swift' <<<"$depends"; then die "Depends names a Swift package: $depends"; fi
# The OCR reads English unless told otherwise; Xvfb (display start), the session bus and AT-SPI (--accessibility),
# and the fonts whose glyphs the per-control reading compares are what most commands want.
depends="$depends, tesseract-ocr-eng"
recommends="xvfb, dbus-daemon, at-spi2-core, fonts-dejavu-core, fonts-urw-base35, xfonts-base"
# More OCR languages; the apps and python3 the examples and the demo start.
suggests="tesseract-ocr-deu, tesseract-ocr-fra, tesseract-ocr-spa, tesseract-ocr-ita, tesseract-ocr-por, xterm, zenity,"
suggests="$suggests x11-apps, python3"
installed_size=$(du -sk --apparent-size --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOF
Package: xclaw
Version: $package_version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: $depends
Recommends: $recommends
Suggests: $suggests
Section: x11
Priority: optional
Description: desktop automation for X11: OCR, accessibility trees and Claude agents
 xclaw sees the screen (XShm capture, in-process tesseract OCR, the window
 tree, the accessibility trees of GTK and Qt apps), acts on it (XTest
 clicks, keys, exact Unicode typing, find-and-tap by label) and lets Claude
 drive it (xclaw run, agents, schedules, approvals, run reports). A resident
 daemon keeps displays and OCR engines warm, and xclaw mcp serves the
 tools to MCP clients.
 .
 The package holds the xclaw command (its helpers in /usr/lib/xclaw), a man
 page for every command, bash, zsh and fish completions, a systemd user unit
 for the daemon, the documentation and the examples.
EOF
(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"

mkdir -p "$out"
deb="$(cd "$out" && pwd)/xclaw_${package_version}_${arch}.deb"
dpkg-deb --root-owner-group -Z"$compression" --build "$root" "$deb" >&2
echo "$deb"
