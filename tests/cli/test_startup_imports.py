"""What a real ``desktop-agent -p`` turn imports (``python -X importtime``), and what the window's first paint
imports: pins the start-up gains of issues 28 and 23 (nothing of the GUI, the remote bridge, the desktop
notifications, syntax highlighting or the ``anthropic`` SDK in a CLI turn; not the host's sessions and engine, the
tools, the worktree review or the protocol models when the window module loads)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.anthropic_server import FakeAnthropic, reply, text

ROOT = Path(__file__).resolve().parents[2]

# Never needed for a -p turn against an Anthropic endpoint (no MCP server configured, no remote, no window).
NOT_IN_A_TURN = ("aiohttp", "pygments", "dbus_fast", "PySide6", "qasync", "anthropic", "keyring",
                 "desktop_agent.ui", "desktop_agent.host.remote", "desktop_agent.host.daemon",
                 "desktop_agent.host.notify", "desktop_agent.model.openai_wire",
                 # checkpoint-only, MCP-only, and only for a shell the sandbox wraps (a turn without Bash):
                 "desktop_agent.session.checkpoints", "desktop_agent.session.folder_watch", "desktop_agent.mcp.client",
                 "desktop_agent.permissions.egress", "desktop_agent.permissions.sandbox_caches")


def imported_modules(stderr: str) -> set[str]:
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "cumulative" not in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def test_a_print_mode_turn_imports_nothing_it_does_not_use(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_CODE_", "PYTHON"))}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "cfg"),
               XDG_CACHE_HOME=str(home / "cache"), PYTHONPATH=str(ROOT), CLAUDE_CODE_MAX_RETRIES="0",
               ANTHROPIC_API_KEY="test-key")
    with FakeAnthropic() as fake:
        fake.steps = [reply(text("Hello from the fake model."))]
        env["ANTHROPIC_BASE_URL"] = fake.base_url
        out = subprocess.run([sys.executable, "-X", "importtime", "-m", "desktop_agent", "-p", "Say hello.",
                              "--output-format", "stream-json", "--verbose"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    result = [json.loads(line) for line in out.stdout.splitlines() if line.strip()][-1]
    assert result["type"] == "result" and result["result"] == "Hello from the fake model."
    names = imported_modules(out.stderr)
    assert "desktop_agent.cli.headless" in names  # the profile is of the real run
    unwanted = sorted(n for n in names if n.split(".")[0] in NOT_IN_A_TURN or n.startswith(NOT_IN_A_TURN))
    assert unwanted == []


def test_the_window_module_does_not_import_the_host_sessions_the_tools_the_review_or_the_protocol():
    code = ("import sys; import desktop_agent.ui.window.main_window; "
            "print(sorted(m for m in sys.modules if m in ('desktop_agent.host.server', 'desktop_agent.host.session',"
            " 'desktop_agent.host.inbox', 'desktop_agent.session.review', 'desktop_agent.session.worktrees',"
            " 'desktop_agent.tools.edit', 'desktop_agent.tools.write', 'desktop_agent.core.tool',"
            # the protocol models (~60 ms) load after the window's first paint, with the first session
            " 'desktop_agent.protocol', 'desktop_agent.client.session', 'desktop_agent.host.connections')))")
    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM="offscreen")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
