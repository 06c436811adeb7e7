#!/usr/bin/env bash
# Install the reference agent (@anthropic-ai/claude-code from npm) into a scratch folder OUTSIDE the
# repository and print the path of its `claude` binary on the last line of stdout.
#
#   bench/reference_setup.sh            # install once (idempotent), print the binary path
#   REFERENCE_DIR=/some/dir bench/reference_setup.sh
#   CLAUDE_CODE_VERSION=2.0.0 bench/reference_setup.sh   # pin a version (default: latest)
#
# Used by bench/bench_cli_vs_reference.py. node_modules lives under the scratch folder only and is
# never committed. Progress goes to stderr; stdout carries only the binary path.
set -euo pipefail

DIR="${REFERENCE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/desktop-agent-bench/reference}"
VERSION="${CLAUDE_CODE_VERSION:-latest}"
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

case "$(cd "$(dirname "$DIR")" 2>/dev/null && pwd || echo "$DIR")/" in
  "$REPO_ROOT"/*) echo "reference_setup: refusing to install inside the repository ($DIR)" >&2; exit 2 ;;
esac

command -v node >/dev/null || { echo "reference_setup: node is not installed (need node >= 18)" >&2; exit 3; }
command -v npm >/dev/null || { echo "reference_setup: npm is not installed" >&2; exit 3; }

mkdir -p "$DIR"
BIN="$DIR/node_modules/.bin/claude"

installed_version() {
  node -e 'try{process.stdout.write(require(process.argv[1]).version)}catch(e){}' \
    "$DIR/node_modules/@anthropic-ai/claude-code/package.json" 2>/dev/null || true
}

need_install=1
if [ -x "$BIN" ]; then
  have="$(installed_version)"
  if [ "$VERSION" = "latest" ] || [ "$VERSION" = "$have" ]; then
    need_install=0
  fi
fi

if [ "$need_install" = 1 ]; then
  echo "reference_setup: installing @anthropic-ai/claude-code@$VERSION into $DIR" >&2
  [ -f "$DIR/package.json" ] || printf '{\n  "name": "desktop-agent-bench-reference",\n  "private": true\n}\n' > "$DIR/package.json"
  (cd "$DIR" && npm install --no-audit --no-fund --loglevel=error "@anthropic-ai/claude-code@$VERSION" >&2)
fi

[ -x "$BIN" ] || { echo "reference_setup: $BIN missing after npm install" >&2; exit 4; }
echo "reference_setup: @anthropic-ai/claude-code $(installed_version) at $BIN" >&2
echo "$BIN"
