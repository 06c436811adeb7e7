#!/usr/bin/env bash
# Install (or --uninstall) the Desktop Agent bundle for the current user, from the unpacked tarball:
#   app          -> ~/.local/lib/desktop-agent/ (kept apart from the data in ~/.local/share/desktop-agent)
#   command      -> ~/.local/bin/desktop-agent (symlink)
#   menu entry   -> ${XDG_DATA_HOME:-~/.local/share}/applications/io.github.desktop_agent.DesktopAgent.desktop
#   icons        -> ${XDG_DATA_HOME:-~/.local/share}/icons/hicolor/<size>/apps/desktop-agent.{png,svg}
#   metainfo     -> ${XDG_DATA_HOME:-~/.local/share}/metainfo/
# Settings, sessions and logs are never touched (see the README's "Uninstall").
# Usage: ./install.sh [--uninstall]
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
DATA="${XDG_DATA_HOME:-$HOME/.local/share}"
BIN="$HOME/.local/bin"
APP_DIR="$HOME/.local/lib/desktop-agent"
DESKTOP="$DATA/applications/io.github.desktop_agent.DesktopAgent.desktop"
METAINFO="$DATA/metainfo/io.github.desktop_agent.DesktopAgent.metainfo.xml"

refresh() {
  command -v update-desktop-database >/dev/null && update-desktop-database -q "$DATA/applications" || true
  command -v gtk-update-icon-cache >/dev/null && gtk-update-icon-cache -q -t "$DATA/icons/hicolor" 2>/dev/null || true
}

if [ "${1:-}" = "--uninstall" ]; then
  rm -rf "$APP_DIR"
  [ -L "$BIN/desktop-agent" ] && rm -f "$BIN/desktop-agent"
  rm -f "$DESKTOP" "$METAINFO"
  find "$DATA/icons/hicolor" -path '*/apps/desktop-agent.*' -delete 2>/dev/null || true
  refresh
  echo "Desktop Agent removed (settings, sessions and logs kept)."
  exit 0
fi

mkdir -p "$APP_DIR" "$BIN" "$DATA/applications" "$DATA/metainfo"
rm -rf "$APP_DIR" && cp -a "$HERE/desktop-agent" "$APP_DIR"
ln -sfn "$APP_DIR/desktop-agent" "$BIN/desktop-agent"
# The menu entry runs the installed binary by absolute path (~/.local/bin may not be on PATH).
sed -e "s|^Exec=desktop-agent|Exec=$APP_DIR/desktop-agent|" -e "s|^TryExec=desktop-agent|TryExec=$APP_DIR/desktop-agent|" \
  "$HERE/share/applications/io.github.desktop_agent.DesktopAgent.desktop" > "$DESKTOP"
cp "$HERE/share/metainfo/"*.metainfo.xml "$METAINFO"
cp -r "$HERE/share/icons" "$DATA/"
refresh
echo "Desktop Agent installed: $BIN/desktop-agent (and in the applications menu)."
