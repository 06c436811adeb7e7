#!/usr/bin/env bash
# Extract the UI's tr() strings into the Qt translation sources and compile them:
#   desktop_agent/ui/**/*.py --pyside6-lupdate--> resources/translations/desktop_agent_<lang>.ts
#                            --pyside6-lrelease-> resources/translations/desktop_agent_<lang>.qm
# Existing translations are kept; new strings arrive as type="unfinished" — translate them in
# Qt Linguist (pyside6-linguist) or any editor, then run this again to rebuild the .qm files.
# Both the .ts and the .qm are committed (the wheel and the bundle ship the .qm).
#
# Usage: bash packaging/update_translations.sh [--check]
#   --check  also fail (exit 1) when any string is untranslated, for CI or before a release.
# Needs pyside6-lupdate / pyside6-lrelease (PySide6-Essentials); uses .venv/bin when present.
set -euo pipefail
cd "$(dirname "$0")/.."

CHECK=0
[ "${1:-}" = "--check" ] && CHECK=1
LANGS="${DESKTOP_AGENT_LANGS:-zh_CN}"

tool() {
  if [ -x ".venv/bin/$1" ]; then echo ".venv/bin/$1"; elif command -v "$1" >/dev/null; then command -v "$1";
  else echo "update_translations: $1 not found (pip install PySide6-Essentials)" >&2; exit 1; fi
}
LUPDATE="$(tool pyside6-lupdate)"
LRELEASE="$(tool pyside6-lrelease)"

# Every Python file of the UI package, sorted for a stable .ts order.
mapfile -t SOURCES < <(find desktop_agent/ui -name '*.py' -not -path '*/__pycache__/*' | LC_ALL=C sort)
[ "${#SOURCES[@]}" -gt 0 ] || { echo "update_translations: no sources under desktop_agent/ui" >&2; exit 1; }

status=0
for lang in $LANGS; do
  ts="resources/translations/desktop_agent_${lang}.ts"
  qm="resources/translations/desktop_agent_${lang}.qm"
  # -locations none: no line numbers in the .ts, so it changes only when strings change.
  "$LUPDATE" -silent -no-obsolete -locations none -target-language "$lang" "${SOURCES[@]}" -ts "$ts"
  "$LRELEASE" -silent -nounfinished "$ts" -qm "$qm"
  total=$(grep -c '<source>' "$ts" || true)
  unfinished=$(grep -c 'type="unfinished"' "$ts" || true)
  echo "update_translations: $ts: $total strings, $unfinished untranslated; wrote $qm"
  if [ "$unfinished" != 0 ]; then
    grep -B2 'type="unfinished"' "$ts" | sed -n 's/.*<source>\(.*\)<\/source>.*/  untranslated: \1/p' >&2
    [ "$CHECK" = 1 ] && status=1
  fi
done
exit "$status"
