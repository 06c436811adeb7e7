"""What binding deny rules to the file costs a Read: the same 200-line Read through ``run_tool_use`` with five
Read deny rules, with the identity checks (the file's and its folders' inodes, and the check of what was opened)
and with them switched off, in the same run. Target: ≤ +0.2 ms per Read (issue 22)."""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import report, result  # noqa: E402
from desktop_agent.core.context import ToolUseContext  # noqa: E402
from desktop_agent.engine.execution import run_tool_use  # noqa: E402
from desktop_agent.permissions import identity, path_rules as paths  # noqa: E402
from desktop_agent.permissions.context import PermissionContext  # noqa: E402
from desktop_agent.tools.read.tool import ReadTool  # noqa: E402

N = 400


def main() -> None:
    ws = Path(tempfile.mkdtemp(prefix="bench-identity-")) / "a" / "b" / "c" / "project"
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "secrets").mkdir()
    (ws / ".env").write_text("X=1\n")
    target = ws / "src" / "pkg" / "mod.py"
    target.write_text("".join(f"line {i} = {i}\n" for i in range(200)))

    def ctx() -> ToolUseContext:
        pc = PermissionContext(str(ws), mode="default")
        pc.add_rules(["Read(./.env)", "Read(./secrets/**)", "Read(~/.ssh/**)", "Read(./config/prod.json)",
                      "Read(**/*.pem)"], "deny")
        identity.capture(pc)
        return ToolUseContext(cwd=str(ws), tools=[ReadTool()], permission_context=pc)

    async def reads(c: ToolUseContext) -> list[float]:
        out = []
        for i in range(N):
            c.read_file_state.clear() if hasattr(c.read_file_state, "clear") else None
            t0 = time.perf_counter()
            r = await run_tool_use({"type": "tool_use", "id": f"t{i}", "name": "Read",
                                    "input": {"file_path": str(target)}}, c)
            out.append(time.perf_counter() - t0)
            assert not r.is_error
        return out

    with_ids: list[float] = []
    without: list[float] = []
    real_by_identity, real_opened = paths.denied_by_identity, PermissionContext.opened_denied
    for _ in range(3):  # interleaved rounds: drift hits both sides alike
        with_ids += asyncio.run(reads(ctx()))
        paths.denied_by_identity = lambda *a, **k: None  # type: ignore[assignment]
        PermissionContext.opened_denied = lambda self, fd, op: False  # type: ignore[method-assign]
        try:
            without += asyncio.run(reads(ctx()))
        finally:
            paths.denied_by_identity = real_by_identity
            PermissionContext.opened_denied = real_opened  # type: ignore[method-assign]
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    print(f"Read with identity checks: {med(with_ids) * 1e3:.3f} ms; without: {med(without) * 1e3:.3f} ms; "
          f"added {(med(with_ids) - med(without)) * 1e3:.3f} ms (depth {len(target.parts)} path, {N * 3} reads each)")
    added = med(with_ids) - med(without)
    # the ratio's target is what +0.2 ms is on this machine's Read without the checks
    report([result("Read: ms added by the identity checks (median with − median without)", [added], unit="ms",
                   target=0.2, scale=1e3),
            result("Read with identity checks vs without", with_ids, baseline=without, kind="ratio",
                   target=round(1 + 0.0002 / med(without), 2))])
    os.system(f"rm -rf {ws.parents[3]}")


if __name__ == "__main__":
    main()
