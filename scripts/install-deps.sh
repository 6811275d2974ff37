#!/usr/bin/env bash
# Installs the Debian packages xclaw builds and tests against. Idempotent: it asks apt only for what is
# missing and runs `apt-get update` only when something is. Needs root (or sudo) when anything is missing.
#   scripts/install-deps.sh            build + test dependencies
#   scripts/install-deps.sh --demo     only what examples/demo.sh builds and shows (the README's first command)
#   scripts/install-deps.sh --python   that and what the Python client's quick start needs (clients/python)
#   scripts/install-deps.sh --bench    also the peers the benchmarks compare against (scrot, the tesseract CLI;
#                                      PyAutoGUI with OpenCV goes into a venv that `bench image` makes)
set -euo pipefail

# What xclaw builds against, and what the demo runs: its display, terminal, dialog, buses and OCR languages.
packages=(
  pkg-config
  libx11-dev libxtst-dev libxext-dev libxrandr-dev libpng-dev
  libtesseract-dev tesseract-ocr-eng libcurl4-openssl-dev libsqlite3-dev libjpeg-dev
  # The fleet's store links libpq.
  libpq-dev
  # Glyph comparison for per-control reading: FreeType and the fonts toolkits draw labels in.
  libfreetype-dev fonts-dejavu-core xfonts-base fonts-urw-base35
  # Accessibility (AT-SPI2): GDBus for the reader, the session and accessibility buses.
  libglib2.0-dev libatspi2.0-dev dbus dbus-bin at-spi2-core
  xvfb xauth
  # The demo's apps, the OCR languages it reads the terminal in (`--lang eng+deu+fra`), and python3 for reading JSON.
  xterm zenity tesseract-ocr-deu tesseract-ocr-fra python3
)
# The Python client's quick start (clients/python): a venv to install it in, and Tk for its example's form.
[[ "${1:-}" == "--python" ]] && packages+=(python3-venv python3-pip python3-tk)
if [[ "${1:-}" != "--demo" && "${1:-}" != "--python" ]]; then
  packages+=(
    sqlite3
    # A PostgreSQL server the store tests start in a temporary directory.
    postgresql
    # The other Latin-script OCR languages for `--lang` (docs/perception.md, "OCR languages").
    tesseract-ocr-spa tesseract-ocr-ita tesseract-ocr-por
    # ss: a test display's failure lists the clients of its server (XclawTesting's DisplayDiagnosis).
    iproute2
    x11-apps x11-utils openbox
    # Python venv and pip: the test clients (the official MCP client, jsonschema, websockets, pytest) live in a venv
    # that scripts/test-venv.sh makes once per build tree (scripts/test-clients.txt).
    python3-venv python3-pip
    # xdotool: the replay tests move windows with it (no window manager runs on the tests' Xvfb).
    xdotool
    # wmctrl and xclip: the oracles of the window-control and clipboard tests (xdotool's for input and search).
    wmctrl xclip
    # The accessibility tests' apps.
    gtk-3-examples featherpad
    # Tk and GTK apps (run with /usr/bin/python3) as test clients: the grounding suite's, the image search's; and its
    # Motif app.
    python3-tk python3-gi gir1.2-gtk-3.0 libmotif-dev
    # PyYAML: the deployment tests parse the Kubernetes manifests (deploy/kubernetes) with it.
    python3-yaml
    # Headless chromium loads the run reports in the tests (offline, no console errors, overlays where they belong).
    chromium
    # The Debian package (scripts/package-deb.sh, DebianPackageTests): dpkg-shlibdeps, strip and readelf, groff to
    # check the man pages, man to find them once installed, systemd-analyze to check the user unit.
    dpkg-dev binutils groff-base man-db systemd
    # The desktop services' tests (a private session bus each): a notification server and a sender, an MPRIS
    # player (mpv with its MPRIS plugin, playing a generated tone), evolution-data-server for calendar and contacts.
    dunst libnotify-bin mpv mpv-mpris evolution-data-server
    # Open and units: xdg-open (with `file` for a file's type) and the handlers it runs; a systemd user manager
    # (systemd, above) with the session bus it starts from dbus-user-session's dbus.socket, in a namespace unshare makes.
    xdg-utils file dbus-user-session util-linux
  )
fi
[[ "${1:-}" == "--bench" ]] && packages+=(scrot tesseract-ocr)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present" >&2
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: missing ${missing[*]}; run this script as root" >&2; exit 2; }
  sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
