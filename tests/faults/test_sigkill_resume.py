"""Fault: SIGKILL of the engine (the headless CLI process) at random points during 100 turns with edits,
each time resumed with ``--resume``.

The CLI runs against the fake server (``tests/faults/cli_harness.py``); turns alternate Edit (a counter file,
Read + Edit in one reply), Bash and Read. Every few turns the process is killed with SIGKILL at a random
moment inside a turn, then a new process resumes the session and goes on. After every kill:
- the counter file is exactly ``count = N`` for the last confirmed N or N + 1 (old or new, never torn); a kill
  inside the atomic writer may leave its ``.counter.txt.<pid>.<random>.tmp`` beside it (counted and printed),
  and the next write of the file removes it (none is left at the end);
- the transcript parses line by line (a torn last line is tolerated by the loader) and loads into a
  valid API sequence (every tool_use answered);
- the resumed process accepts the session and its requests pass the fake server's API validation.
The atomicity of the file writes alone (200 kills of a process doing Edits) is
``tests/tools/test_crash_atomic.py``; this test adds the transcript and resume side.
Prints the number of kills, turns completed and where the kills landed.
"""

from __future__ import annotations

import os
import random
import re
import signal
import time
import uuid
from pathlib import Path

from desktop_agent.core.messages import normalize_for_api
from desktop_agent.session.resume import load_conversation_for_resume
from desktop_agent.session.store import read_transcript

from .cli_harness import Cli, SoakFake
from .util import api_pairing_problems

ROOT = Path(__file__).resolve().parents[2]
TURNS = 100
KILLS = 6


def _env(fake: SoakFake, home: str) -> dict[str, str]:
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-kill", ANTHROPIC_BASE_URL=fake.base_url, HOME=home,
               CLAUDE_CONFIG_DIR=os.path.join(home, ".claude"), XDG_DATA_HOME=os.path.join(home, ".data"),
               XDG_CONFIG_HOME=os.path.join(home, ".config"), XDG_STATE_HOME=os.path.join(home, ".state"),
               PYTHONPATH=str(ROOT))
    env.pop("ANTHROPIC_MODEL", None)
    return env


KILL_POINTS = ["sent", "tool_use", "tool_result"]


def _is_point(obj: dict, point: str) -> bool:
    content = (obj.get("message") or {}).get("content")
    blocks = content if isinstance(content, list) else []
    kind = {"tool_use": ("assistant", "tool_use"), "tool_result": ("user", "tool_result")}[point]
    return obj.get("type") == kind[0] and any(b.get("type") == kind[1] for b in blocks)


def _counter(ws: str) -> int:
    text = Path(ws, "counter.txt").read_text()
    m = re.fullmatch(r"count = (\d+)\n", text)
    assert m, f"torn counter file: {text!r}"
    return int(m.group(1))


def test_sigkill_at_random_points_then_resume(tmp_path):
    rng = random.Random(100)
    ws = str(tmp_path / "ws")
    home = str(tmp_path / "home")
    os.makedirs(ws)
    os.makedirs(home)
    Path(ws, "notes.txt").write_text("needle\n" * 10)
    Path(ws, "counter.txt").write_text("count = 0\n")
    session_id = str(uuid.uuid4())
    kill_turns = sorted(rng.sample(range(5, TURNS - 5), KILLS))
    landed: list[str] = []
    leftover_temps: set[str] = set()
    with SoakFake(ws) as fake:
        env = _env(fake, home)
        cli = Cli(ws, env, ["--session-id", session_id])
        counter = 0
        turn = 0
        resumed = 0
        while turn < TURNS:
            kind = turn % 3
            prompt = f"EDIT {counter} {counter + 1}" if kind == 0 else ("BASH list" if kind == 1 else "READ notes")
            if turn in kill_turns:
                start = len(cli.lines)
                cli.send({"type": "user", "message": {"role": "user", "content": prompt}})
                # Kill inside the turn: right away, once the reply with the tool calls is out, or once a
                # tool result is out (the Edit may be mid-write then), plus a few random milliseconds.
                point = KILL_POINTS[len(landed) % len(KILL_POINTS)]
                if point != "sent":
                    cli.wait_for(lambda o, p=point: _is_point(o, p), start, timeout=30)
                time.sleep(rng.uniform(0.0, 0.01))
                lines = cli.lines[start:]
                landed.append(point + (" (turn already over)" if any(o.get("type") == "result" for o in lines)
                                       else ""))
                os.kill(cli.proc.pid, signal.SIGKILL)
                cli.proc.wait(10)
                # Old or new content, nothing else. A kill inside the atomic writer can leave its temp file
                # (``.counter.txt.<pid>.<random>.tmp``, never the target itself): counted and reported, not an error.
                value = _counter(ws)
                assert value in (counter, counter + 1), (value, counter)
                temps = [n for n in os.listdir(ws) if n.endswith(".tmp")]
                assert all(re.fullmatch(r"\.counter\.txt\..+\.tmp", n) for n in temps), temps
                leftover_temps.update(temps)
                counter = value
                found = list(Path(home).rglob(f"{session_id}.jsonl"))
                assert found, "the transcript exists after the kill"
                loaded = load_conversation_for_resume(read_transcript(found[0], full=True))
                assert not api_pairing_problems(loaded.messages), api_pairing_problems(loaded.messages)
                assert normalize_for_api(loaded.messages)[0]["role"] == "user"
                cli = Cli(ws, env, ["--resume", session_id])
                resumed += 1
                turn += 1
                continue
            result = cli.turn(prompt)
            assert result.get("session_id") == session_id, result
            if kind == 0:
                assert not result["is_error"], result
                counter += 1
                assert _counter(ws) == counter
            turn += 1
        assert cli.close() == 0
        rejected = list(fake.errors)
    transcript = list(Path(home).rglob(f"{session_id}.jsonl"))[0]
    entries = read_transcript(transcript, full=True)
    loaded = load_conversation_for_resume(entries)
    print(f"{KILLS} SIGKILLs over {TURNS} turns (landed: {', '.join(landed)}), {resumed} resumes, final "
          f"counter {counter}, transcript {len(entries)} entries, requests the API would reject: {len(rejected)}, "
          f"temp files left by kills inside the writer: {len(leftover_temps)}")
    assert resumed == KILLS
    assert not rejected, rejected[:3]
    assert not [n for n in os.listdir(ws) if n.endswith(".tmp")], "a later write removes a killed writer's temp"
    assert not api_pairing_problems(loaded.messages)
    assert _counter(ws) == counter
