#!/usr/bin/env bash
# Render the app icon PNGs from the SVG sources into resources/icons/hicolor/<n>x<n>/apps/.
# 16 and 24 px come from the pixel-hinted variants in resources/icons/src/, the rest from the
# scalable SVG. Needs rsvg-convert (Debian/Ubuntu: apt-get install librsvg2-bin).
# The PNGs are committed; run this only after changing an SVG. Usage: bash packaging/render_icons.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v rsvg-convert >/dev/null || { echo "render_icons: rsvg-convert not found (apt-get install librsvg2-bin)" >&2; exit 1; }
ICONS=resources/icons
for size in 16 24 32 48 64 128 256 512; do
  case $size in
    16) src=$ICONS/src/desktop-agent-16.svg ;;
    24) src=$ICONS/src/desktop-agent-24.svg ;;
    *)  src=$ICONS/hicolor/scalable/apps/desktop-agent.svg ;;
  esac
  out=$ICONS/hicolor/${size}x${size}/apps/desktop-agent.png
  mkdir -p "$(dirname "$out")"
  rsvg-convert --width "$size" --height "$size" --keep-aspect-ratio "$src" --output "$out"
  echo "render_icons: $out"
done
