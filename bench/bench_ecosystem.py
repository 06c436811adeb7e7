"""The ecosystem's costs (issue 17), run by hand: ``.venv/bin/python bench/bench_ecosystem.py [--runs N] [--calls N]``.

(a) ``desktop-agent -p hi --output-format json`` with the OpenAI-compatible provider (``--provider openai``,
    ``OPENAI_BASE_URL`` → ``tests/fakes/openai_server.FakeOpenAI``) vs the Anthropic one (``ANTHROPIC_BASE_URL`` →
    ``tests/fakes/anthropic_server.FakeAnthropic``), alternating in the same run, median of ``--runs`` (10) after
    one unmeasured warm-up each: start-up (spawn → the first request reaches the fake server), the first
    request's latency as the CLI saw it (``duration_api_ms`` of the result) and the whole run (spawn → exit).
(b) MCP against a built-in tool, in one process: per-call latency through ``run_tool_use`` of ``mcp__fake__echo``
    (``tests/fakes/mcp_server.py`` over stdio, allowed by an ``mcp__fake`` rule) vs a built-in ``Read`` of a small
    file (median of ``--calls`` (50) each, after 5 warm-ups), and the MCP server's start-up (``McpManager.start``
    until its tools are listed; median of 5 cold starts).

Targets (``abs``/``ratio``, see ``bench/_common.py``): the OpenAI provider's start-up and run within 1.25× of
the Anthropic one's; an MCP call within 20 ms (a JSON-RPC round trip to a local process); the server up in 3 s.
The last line is ``BENCH_JSON [...]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from bench._common import report, result  # noqa: E402
from tests.fakes.anthropic_server import FakeAnthropic, reply, text  # noqa: E402
from tests.fakes.openai_server import FakeOpenAI  # noqa: E402

PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable


def base_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_CODE_", "OPENAI_"))}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "cfg"),
               PYTHONPATH=str(ROOT), CLAUDE_CODE_MAX_RETRIES="0",
               PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    env.pop("DESKTOP_AGENT_PROVIDER", None)
    return env


def one_run(provider: str, fake: FakeAnthropic, home: Path, work: Path) -> dict[str, float]:
    env = base_env(home)
    args = [PY, "-m", "desktop_agent", "-p", "hi", "--output-format", "json"]
    if provider == "openai":
        env.update(OPENAI_BASE_URL=fake.base_url, OPENAI_API_KEY="sk-local")
        args += ["--provider", "openai", "--model", "qwen2.5-coder:7b"]
    else:
        env.update(ANTHROPIC_BASE_URL=fake.base_url, ANTHROPIC_API_KEY="test-key")
    fake.script([reply(text("hello"))])
    seen = len(fake.requests)
    t0 = time.monotonic()
    proc = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=120)
    wall = time.monotonic() - t0
    if proc.returncode != 0 or len(fake.requests) != seen + 1:
        raise SystemExit(f"{provider} run failed ({proc.returncode}): {proc.stderr[-500:]}")
    out = json.loads(proc.stdout)
    assert out["result"] == "hello", out
    return {"startup": fake.requests[seen].time - t0, "api": out["duration_api_ms"] / 1000, "wall": wall}


def providers(runs: int) -> list[dict[str, Any]]:
    samples: dict[str, dict[str, list[float]]] = {p: {"startup": [], "api": [], "wall": []}
                                                   for p in ("anthropic", "openai")}
    with tempfile.TemporaryDirectory() as tmp, FakeAnthropic() as anth, FakeOpenAI() as oai:
        home, work = Path(tmp) / "home", Path(tmp) / "work"
        work.mkdir(parents=True)
        servers = {"anthropic": anth, "openai": oai}
        for p in servers:  # warm-up: the OS page cache, .pyc files
            one_run(p, servers[p], home, work)
        for _ in range(runs):
            for p in servers:
                for k, v in one_run(p, servers[p], home, work).items():
                    samples[p][k].append(v)
    a, o = samples["anthropic"], samples["openai"]
    return [
        result("anthropic: start-up to first request", a["startup"], unit="ms", scale=1000, target=2000),
        result("openai: start-up to first request", o["startup"], unit="ms", scale=1000, target=1.25, kind="ratio",
               baseline=a["startup"]),
        result("anthropic: first request latency (duration_api_ms)", a["api"], unit="ms", scale=1000, target=500),
        result("openai: first request latency (duration_api_ms)", o["api"], unit="ms", scale=1000, target=1.25,
               kind="ratio", baseline=a["api"]),
        result("anthropic: one-turn -p run, spawn to exit", a["wall"], unit="ms", scale=1000, target=3000),
        result("openai: one-turn -p run, spawn to exit", o["wall"], unit="ms", scale=1000, target=1.25, kind="ratio",
               baseline=a["wall"]),
    ]


async def _mcp(calls: int, starts: int) -> list[dict[str, Any]]:
    from desktop_agent.core.context import ToolUseContext
    from desktop_agent.engine.execution import run_tool_use
    from desktop_agent.mcp.client import McpManager
    from desktop_agent.mcp.config import McpServerConfig
    from desktop_agent.permissions.context import PermissionContext
    from desktop_agent.tools.registry import default_tools

    cfg = McpServerConfig(name="fake", command=PY, args=["-m", "tests.fakes.mcp_server", "stdio"],
                          env={"PYTHONPATH": str(ROOT)}, cwd=str(ROOT))
    start_samples: list[float] = []
    for _ in range(starts):
        manager = McpManager([cfg])
        t0 = time.perf_counter()
        await manager.start()
        start_samples.append(time.perf_counter() - t0)
        assert any(t.name == "mcp__fake__echo" for t in manager.tools()), manager.status()
        await manager.aclose()

    manager = McpManager([cfg])
    await manager.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            small = Path(tmp) / "small.txt"
            small.write_text("".join(f"line {i}\n" for i in range(20)))
            pc = PermissionContext(tmp, mode="default")
            pc.add_rules(["mcp__fake", "Read"], "allow", "userSettings")
            ctx = ToolUseContext(cwd=tmp, tools=default_tools(None) + manager.tools(),
                                 permission_context=pc)

            async def timed(name: str, inp: dict[str, Any], n: int, warm: int = 5) -> list[float]:
                out = []
                for i in range(warm + n):
                    block = {"type": "tool_use", "id": f"toolu_{name[:4]}_{i}", "name": name, "input": inp}
                    t0 = time.perf_counter()
                    res = await run_tool_use(block, ctx)
                    dt = time.perf_counter() - t0
                    assert not res.is_error, res.block
                    ctx.read_file_state.delete(str(small))  # every Read reads the file (no "unchanged" short cut)
                    if i >= warm:
                        out.append(dt)
                return out

            builtin = await timed("Read", {"file_path": str(small)}, calls)
            mcp = await timed("mcp__fake__echo", {"text": "hi"}, calls)
    finally:
        await manager.aclose()
    return [
        result("built-in Read via run_tool_use, per call", builtin, unit="ms", scale=1000, target=20),
        result("mcp__fake__echo (stdio) via run_tool_use, per call", mcp, unit="ms", scale=1000, target=20),
        result("mcp__fake__echo over built-in Read", mcp, unit="ms", scale=1000, target=100, kind="ratio",
               baseline=builtin),
        result("MCP server start-up (stdio, tools listed)", start_samples, unit="ms", scale=1000, target=3000),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--starts", type=int, default=5)
    a = ap.parse_args()
    items = providers(a.runs)
    items += asyncio.run(_mcp(a.calls, a.starts))
    report(items)
    return 0 if all(i["passed"] for i in items) else 1


if __name__ == "__main__":
    raise SystemExit(main())
