#!/usr/bin/env bash
# Build the Desktop Agent bundle: a PyInstaller one-folder app plus a tarball for Linux desktops.
#
#   build/bundle/venv/                       build venv (PyInstaller + the app installed from its wheel)
#   build/bundle/dist/desktop-agent/         the one-folder app: ./desktop-agent
#   build/bundle/desktop-agent-<ver>-linux-<arch>.tar.gz
#       desktop-agent-<ver>/desktop-agent/   the app
#       desktop-agent-<ver>/share/{applications,icons/hicolor,metainfo}/
#       desktop-agent-<ver>/install.sh       per-user install / --uninstall
#
# Then a smoke check: the built app answers --version, opens its window offscreen, paints, and
# exits 0. Too slow for every CI run; run it by hand or on release.
# Works on a fresh Debian/Ubuntu machine from this script alone (needs python3-venv and network
# for the first pip install; run scripts/bootstrap.sh first for Qt's system libraries).
# Usage: bash packaging/build.sh            (env: PYTHON=python3.11, KEEP_VENV=0 to rebuild the venv)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="$ROOT/build/bundle"
PY="${PYTHON:-python3}"
PYINSTALLER_SPEC="pyinstaller>=6.10,<7"
start=$(date +%s)
log() { printf 'build.sh [%3ss] %s\n' "$(( $(date +%s) - start ))" "$*"; }

# Build tools PyInstaller needs on Linux: objdump/strip (binutils) and the shared libpython
# (Debian's python3 binary is static; the .so comes from libpython3.X). Installed when root + apt.
PYSO="$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("INSTSONAME") or "")')"
PYLIBDIR="$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR") or "")')"
need_apt=""
command -v objdump >/dev/null || need_apt="$need_apt binutils"
if [ -n "$PYSO" ] && [ ! -e "$PYLIBDIR/$PYSO" ] && ! ldconfig -p 2>/dev/null | grep -q "$PYSO"; then
  need_apt="$need_apt lib$("$PY" -c 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")')"
fi
if [ -n "$need_apt" ]; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    log "installing build tools:$need_apt"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need_apt >/dev/null
  else
    echo "build.sh: please install:$need_apt" >&2; exit 1
  fi
fi

mkdir -p "$OUT"
VENV="$OUT/venv"
if [ "${KEEP_VENV:-1}" = 0 ]; then rm -rf "$VENV"; fi
if [ ! -x "$VENV/bin/python" ]; then
  log "creating build venv with $("$PY" --version 2>&1)"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1

# 1. The wheel, built from a clean copy (no stale build/lib, nothing written into the checkout).
STAGE="$OUT/stage"
rm -rf "$STAGE" "$OUT/wheel" && mkdir -p "$STAGE"
cp -a desktop_agent resources pyproject.toml setup.py MANIFEST.in README.md "$STAGE/"
find "$STAGE" -name __pycache__ -prune -exec rm -rf {} +
log "building the wheel"
"$VENV/bin/python" -m pip wheel -q --no-deps -w "$OUT/wheel" "$STAGE"
WHEEL="$(ls "$OUT"/wheel/desktop_agent-*.whl)"

# 2. Install it (with its dependencies) and PyInstaller into the build venv.
log "installing $(basename "$WHEEL") and PyInstaller"
"$VENV/bin/python" -m pip install -q --only-binary=:all: "ripgrep==14.1.0" 2>/dev/null || true
"$VENV/bin/python" -m pip install -q "$PYINSTALLER_SPEC"
"$VENV/bin/python" -m pip install -q --force-reinstall --no-deps "$WHEEL"
"$VENV/bin/python" -m pip install -q "$WHEEL"
VERSION="$("$VENV/bin/python" -c 'import desktop_agent; print(desktop_agent.__version__)')"

# 3. PyInstaller, from a directory outside the checkout so the installed package (not ./desktop_agent) is frozen.
log "running PyInstaller $("$VENV/bin/pyinstaller" --version)"
rm -rf "$OUT/dist" "$OUT/work"
t0=$(date +%s)
(cd "$OUT" && "$VENV/bin/pyinstaller" --noconfirm --clean --log-level WARN \
   --distpath "$OUT/dist" --workpath "$OUT/work" "$ROOT/packaging/desktop-agent.spec")
pyi_secs=$(( $(date +%s) - t0 ))
APPDIR="$OUT/dist/desktop-agent"
# ripgrep: the Grep tool looks next to the interpreter first; ship the wheel's rg beside the binary.
# The wheel's rg carries debug info (26 MB); stripped it is under 5 MB.
if [ -x "$VENV/bin/rg" ]; then
  cp "$VENV/bin/rg" "$APPDIR/rg"
  if command -v strip >/dev/null; then strip "$APPDIR/rg"; fi
  "$APPDIR/rg" --version >/dev/null || { echo "build.sh: the bundled rg does not run" >&2; exit 1; }
fi

# 4. Smoke check: the frozen app starts offscreen and exits cleanly.
log "smoke check"
export QT_QPA_PLATFORM=offscreen
SMOKE_HOME="$(mktemp -d)"
trap 'rm -rf "$SMOKE_HOME"' EXIT
run_app() { HOME="$SMOKE_HOME" XDG_CONFIG_HOME="$SMOKE_HOME/.config" XDG_DATA_HOME="$SMOKE_HOME/.local/share" \
            XDG_STATE_HOME="$SMOKE_HOME/.local/state" timeout 60 "$APPDIR/desktop-agent" "$@"; }
got="$(run_app --version)"
[ "$got" = "$VERSION (Desktop Agent)" ] || { echo "build.sh: --version printed '$got'" >&2; exit 1; }
log "  --version: $got"
# The window: open it offscreen on an empty folder with the dark theme from settings.json (palette,
# style sheet and icon all come from the bundled resources), paint once, exit 0. ui/main.py
# supports this through DESKTOP_AGENT_EXIT_AFTER_PAINT; a --smoke-test flag, if the app grows one,
# is used instead.
mkdir -p "$SMOKE_HOME/project" "$SMOKE_HOME/.config/desktop-agent"
echo '{"theme": "dark"}' > "$SMOKE_HOME/.config/desktop-agent/settings.json"
if grep -rqs -- '"--smoke-test"' "$VENV"/lib/python3*/site-packages/desktop_agent/; then
  run_app --smoke-test >/dev/null || { echo "build.sh: --smoke-test failed" >&2; exit 1; }
  log "  --smoke-test: window opened offscreen and exited 0"
else
  painted="$(DESKTOP_AGENT_EXIT_AFTER_PAINT=1 run_app "$SMOKE_HOME/project" 2>"$SMOKE_HOME/stderr")" \
    || { cat "$SMOKE_HOME/stderr" >&2; echo "build.sh: the window did not start offscreen" >&2; exit 1; }
  case "$painted" in *first_paint_s=*) ;; *) echo "build.sh: the window never painted: $painted" >&2; exit 1 ;; esac
  # "Exits cleanly" includes no Python traceback on the way (Qt overrides swallow them otherwise).
  if grep -qE 'Traceback|Error calling Python override' "$SMOKE_HOME/stderr"; then
    grep -m1 -B2 -A12 'Traceback' "$SMOKE_HOME/stderr" | cut -c1-300 >&2
    echo "build.sh: the window started but printed a Python traceback" >&2; exit 1
  fi
  log "  window: painted offscreen and exited 0 (${painted##*first_paint_s=} s to first paint)"
fi
# Resources resolve inside the bundle (not from a checkout).
[ -f "$APPDIR/_internal/desktop_agent/_resources/themes/dark.qss" ] || { echo "build.sh: resources missing from the bundle" >&2; exit 1; }

# 5. The tarball: app + desktop entry + icons + metainfo + installer.
ARCH="$(uname -m)"
NAME="desktop-agent-$VERSION"
TREE="$OUT/tar/$NAME"
rm -rf "$OUT/tar" && mkdir -p "$TREE/share/applications" "$TREE/share/metainfo"
cp -a "$APPDIR" "$TREE/desktop-agent"
cp resources/linux/io.github.desktop_agent.DesktopAgent.desktop "$TREE/share/applications/"
cp resources/linux/*.metainfo.xml "$TREE/share/metainfo/"
mkdir -p "$TREE/share/icons" && cp -r resources/icons/hicolor "$TREE/share/icons/"
cp packaging/bundle-install.sh "$TREE/install.sh"
TARBALL="$OUT/$NAME-linux-$ARCH.tar.gz"
tar -C "$OUT/tar" -czf "$TARBALL" "$NAME"
rm -rf "$OUT/tar"

total=$(( $(date +%s) - start ))
log "done in ${total}s (PyInstaller ${pyi_secs}s)"
log "app:     $APPDIR ($(du -sh "$APPDIR" | cut -f1))"
log "tarball: $TARBALL ($(du -sh "$TARBALL" | cut -f1))"
