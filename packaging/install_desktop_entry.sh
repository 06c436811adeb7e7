#!/usr/bin/env bash
# Add (or --uninstall) the menu entry, icons and AppStream metadata of a pip/pipx-installed
# Desktop Agent for the current user. The files come from the installed package itself
# (desktop_agent/_resources), so they match the installed version.
#   ${XDG_DATA_HOME:-~/.local/share}/applications/io.github.desktop_agent.DesktopAgent.desktop
#   ${XDG_DATA_HOME:-~/.local/share}/icons/hicolor/<size>/apps/desktop-agent.{png,svg}
#   ${XDG_DATA_HOME:-~/.local/share}/metainfo/io.github.desktop_agent.DesktopAgent.metainfo.xml
# Usage: bash packaging/install_desktop_entry.sh [--uninstall]   (DESKTOP_AGENT=/path/to/desktop-agent)
set -euo pipefail
APP_ID=io.github.desktop_agent.DesktopAgent
DATA="${XDG_DATA_HOME:-$HOME/.local/share}"

refresh() {
  command -v update-desktop-database >/dev/null && update-desktop-database -q "$DATA/applications" || true
  command -v gtk-update-icon-cache >/dev/null && gtk-update-icon-cache -q -t "$DATA/icons/hicolor" 2>/dev/null || true
}

if [ "${1:-}" = "--uninstall" ]; then
  rm -f "$DATA/applications/$APP_ID.desktop" "$DATA/metainfo/$APP_ID.metainfo.xml"
  find "$DATA/icons/hicolor" -path '*/apps/desktop-agent.*' -delete 2>/dev/null || true
  refresh
  echo "install_desktop_entry: removed the menu entry and icons"
  exit 0
fi

EXE="${DESKTOP_AGENT:-$(command -v desktop-agent || true)}"
[ -n "$EXE" ] && [ -x "$EXE" ] || { echo "install_desktop_entry: desktop-agent is not on PATH (pipx install . first)" >&2; exit 1; }
EXE="$(readlink -f "$EXE")"
# The entry point script's shebang names the interpreter of its venv (pipx, pip --user, a venv).
PY="$(head -1 "$EXE" | sed -n 's/^#!\s*//p' | cut -d' ' -f1)"
[ -x "$PY" ] || { echo "install_desktop_entry: cannot find the Python of $EXE" >&2; exit 1; }
RES="$("$PY" -c 'from desktop_agent.resources import resource_dir; print(resource_dir())')"

mkdir -p "$DATA/applications" "$DATA/metainfo" "$DATA/icons"
sed -e "s|^Exec=desktop-agent|Exec=$EXE|" -e "s|^TryExec=desktop-agent|TryExec=$EXE|" \
  "$RES/linux/$APP_ID.desktop" > "$DATA/applications/$APP_ID.desktop"
cp "$RES/linux/$APP_ID.metainfo.xml" "$DATA/metainfo/"
cp -r "$RES/icons/hicolor" "$DATA/icons/"
refresh
echo "install_desktop_entry: added $DATA/applications/$APP_ID.desktop (runs $EXE)"
