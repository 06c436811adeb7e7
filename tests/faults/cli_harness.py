"""Drive the real headless CLI against the fake server: a request-driven fake model and a stream-json client.

``SoakFake`` answers from each request (never runs out of script): a prompt ``READ``/``GREP``/``EDIT a b``/
``BASH``/``SLOW`` gets the matching tool call(s), tool results get a short text, anything else (a compaction
request) a summary. ``Cli`` runs ``python -m desktop_agent --input-format stream-json --output-format
stream-json --permission-mode bypassPermissions`` as a child process and sends user turns and interrupts.
Used by ``bench/soak.py`` and ``tests/faults/test_sigkill_resume.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from typing import Any

from tests.fakes.anthropic_server import FakeAnthropic, RecordedRequest, reply, text, tool_use


class SoakFake(FakeAnthropic):
    """Answers from the request (never runs out of script)."""

    def __init__(self, ws: str):
        super().__init__(chunk_size=12)
        self.ws = ws
        self.n = 0

    def next_step(self, record: RecordedRequest):
        with self._lock:
            self.requests.append(record)
            self.n += 1
            n = self.n
            if len(self.requests) > 200:  # keep the recorder's memory flat (it is ours, not the CLI's)
                del self.requests[:100]
        last = record.messages[-1]
        blocks = last["content"] if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]
        if blocks and blocks[-1].get("type") == "tool_result":
            return reply(text(f"Done ({n})."))
        prompt = next((b.get("text", "") for b in reversed(blocks) if b.get("type") == "text"), "")
        words = prompt.split()
        action = words[0] if words else ""
        ws = self.ws
        if action == "READ":
            return reply(text("Reading."), tool_use("Read", {"file_path": os.path.join(ws, "notes.txt")},
                                                    id=f"toolu_{n}_r"))
        if action == "GREP":
            return reply(tool_use("Grep", {"pattern": "needle", "path": ws, "output_mode": "content"},
                                  id=f"toolu_{n}_g"))
        if action == "EDIT" and len(words) == 3:
            path = os.path.join(ws, "counter.txt")
            return reply(tool_use("Read", {"file_path": path}, id=f"toolu_{n}_r"),
                         tool_use("Edit", {"file_path": path, "old_string": f"count = {words[1]}\n",
                                           "new_string": f"count = {words[2]}\n"}, id=f"toolu_{n}_e"))
        if action == "BASH":
            return reply(tool_use("Bash", {"command": f"echo soak {n} && ls {ws} | wc -l"}, id=f"toolu_{n}_b"))
        if action == "SLOW":
            return reply(text("This takes a while."),
                         tool_use("Bash", {"command": "sleep 30; echo never"}, id=f"toolu_{n}_s"))
        return reply(text("<summary>The soak session so far: reads, greps, edits of counter.txt, shell "
                          "commands and a few interrupts.</summary>"))


class Cli:
    """The CLI child and a line reader thread."""

    def __init__(self, ws: str, env: dict[str, str], extra: list[str]):
        cmd = [sys.executable, "-m", "desktop_agent", "--input-format", "stream-json", "--output-format",
               "stream-json", "--permission-mode", "bypassPermissions", *extra]
        self.proc = subprocess.Popen(cmd, cwd=ws, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, bufsize=1)
        self.lines: list[dict[str, Any]] = []
        self.interrupt_latencies: list[float] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.stderr: list[str] = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            with self.cond:
                self.lines.append(obj)
                self.cond.notify_all()

    def send(self, obj: dict[str, Any]) -> None:
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def wait_for(self, pred, start: int, timeout: float = 60.0) -> tuple[int, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for i in range(start, len(self.lines)):
                    if pred(self.lines[i]):
                        return i, self.lines[i]
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise RuntimeError(f"CLI: no expected line (rc={self.proc.poll()}): {''.join(self.stderr)[-2000:]}")
                self.cond.wait(left)

    def turn(self, prompt: str, interrupt: bool = False) -> dict[str, Any]:
        start = len(self.lines)
        self.send({"type": "user", "message": {"role": "user", "content": prompt}, "parent_tool_use_id": None,
                   "session_id": "soak"})
        if interrupt:
            def is_tool_use(o):
                return o.get("type") == "assistant" and any(
                    b.get("type") == "tool_use" for b in (o.get("message") or {}).get("content") or [])
            self.wait_for(is_tool_use, start)
            time.sleep(0.2)  # the slow Bash is running
            t_interrupt = time.perf_counter()
            self.send({"type": "control_request", "request_id": str(uuid.uuid4()),
                       "request": {"subtype": "interrupt"}})
        _, result = self.wait_for(lambda o: o.get("type") == "result", start)
        if interrupt:
            self.interrupt_latencies.append(time.perf_counter() - t_interrupt)
        # The CLI's output lines are ours to drop: keep this process's memory flat.
        with self.cond:
            del self.lines[:]
        return result

    def close(self) -> int:
        self.proc.stdin.close()
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return -9
