#!/usr/bin/env bash
# Set up a development environment on a fresh Debian/Ubuntu machine (or re-check an existing one):
# the system libraries Qt needs (even offscreen), then .venv with the app and its test tools.
# Idempotent; safe to run again. Usage: bash scripts/bootstrap.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# dunst, dbus, dbus-x11: a real notification daemon on a private session bus (tests/host/test_notify.py);
# chromium, chromium-driver: the phone page in a real browser (tests/host/remote/); imagemagick: `import` screenshots
# binutils: `strings`, which a security case runs (a reader the analysis must catch; the suite also checks
# in plain bash that each attack is real, so the program must exist)
# util-linux: `nsenter` (sandboxed shells enter the session's network namespace behind the egress proxy);
# curl, iputils-ping, dbus-daemon, dbus-bin, openssl: the egress leak suite's clients, its real session bus and
# its TLS server's self-signed certificate
APT_PACKAGES="libgl1 libegl1 libxkbcommon0 libfontconfig1 libglib2.0-0 libdbus-1-3 fonts-dejavu-core \
  xvfb xauth libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-shape0 git bubblewrap binutils \
  openbox icewm xdotool xterm x11-utils dunst dbus dbus-x11 chromium chromium-driver imagemagick \
  util-linux curl iputils-ping dbus-daemon dbus-bin openssl"

if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="$(command -v sudo || true)"; fi
  if [ "$(id -u)" = 0 ] || [ -n "$SUDO" ]; then
    missing=""
    for p in $APT_PACKAGES; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
    python3 -m venv --help >/dev/null 2>&1 && python3 -c "import ensurepip" 2>/dev/null || missing="$missing python3-venv"
    if [ -n "$missing" ]; then
      echo "bootstrap: installing system packages:$missing"
      export DEBIAN_FRONTEND=noninteractive
      $SUDO apt-get update -qq
      $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
    fi
  else
    echo "bootstrap: not root and no sudo; make sure these are installed: $APT_PACKAGES" >&2
  fi
fi

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# ripgrep: only the binary wheel (14.1.0); the newest release is source-only and needs crates.io.
.venv/bin/python -m pip install -q --only-binary=:all: "ripgrep==14.1.0" || echo "bootstrap: no ripgrep wheel; Grep will use a system rg" >&2
.venv/bin/python -m pip install -q -e ".[test]"
echo "bootstrap: ready (.venv/bin/desktop-agent)"
