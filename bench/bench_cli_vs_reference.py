"""``desktop-agent -p`` vs the reference agent (``claude -p``) on the same scripted session.

The session: one prompt, 10 model turns, 30 tool calls (Read, Edit, Bash, Grep, Glob — 4+4+4+3×6 calls
in turns 1–9, a closing text reply in turn 10) over a small generated Python project in a temp dir.
The fake Anthropic server (tests/fakes/anthropic_server.py: real HTTP + SSE) plays it from its own
subprocess (``--serve`` mode of this file), so it shares no GIL or core time with anything measured.

Routing (so the reference agent's extra requests do not eat scripted steps): a ``/v1/messages``
request that offers a ``Read``/``Bash`` tool is a main-loop request and gets step N, where N is the
number of assistant messages it carries (stateless: a retried request gets the same step again). Any
other request (title/topic generation, Bash-prefix checks, quota probes — small-model side calls)
gets a generic text reply and is counted as a side call. ``count_tokens`` is answered by the fake.
Unknown paths (GET or POST) get 404 and are logged. The fake's request validation stays on
(``api_problems``); it is counted per run (``api_errors``) and the run is rejected if it trips.

Each agent runs the script ``--runs`` times (default 5) after one unmeasured warm-up, alternating
agents. Per run: wall time from spawn to exit, and peak memory of the whole process tree: the sum of
RSS over the agent and all its descendants (/proc/<pid>/smaps_rollup, polled every 10 ms). A child
still running its parent's command line (forked, not yet exec'd) is skipped: CPython and Bun both
spawn with vfork, and a vfork child shares the parent's address space, so counting it would double
the parent. RSS, not PSS, is the figure compared: PSS splits pages shared with *other* processes on
the machine (libpython, .so files used by other Python programs), which would flatter the Python
agent on a busy box; the peak PSS sum and the largest single-process max RSS (``wait4``) are printed
too. A run counts only if the agent ends with a success ``result``, all 10 main
steps were served, no tool_result came back as an error, and the files on disk are exactly the
expected post-edit content.

Also: cold start of ``--version`` and of a one-turn ``-p`` run for both, and (ours) where the
start-up time goes (``python -X importtime``).

    .venv/bin/python bench/bench_cli_vs_reference.py [--runs N] [--no-reference] [--keep] [--sdk-transport]

``--sdk-transport`` also runs ours over the ``anthropic`` SDK (``DESKTOP_AGENT_API_TRANSPORT=sdk``, see
``OursOverSDK``), to size what importing the SDK costs; it is printed, never in BENCH_JSON.

The reference agent comes from ``bench/reference_setup.sh`` (npm, into a scratch folder outside the
repo); ``REFERENCE_CLAUDE=/path/to/claude`` overrides. Targets (issue 28): wall ≤ 0.30×, peak memory ≤ 0.15× of
the reference agent's.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
PY = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable

WALL_TARGET = 0.30
MEM_TARGET = 0.15
N_MODULES = 6
PAGE = os.sysconf("SC_PAGE_SIZE")
FINAL_TEXT = "Done: nine edits made, tests updated."

# ------------------------------------------------------------------------------ the project and the script


def module_text(i: int) -> str:
    lines = [f'"""Module m{i} of the calc package."""', "", "import math", ""]
    for j in range(1, 6):
        lines.append(f"VALUE_{i}_{j} = {j}")
    lines.append("")
    for j in range(1, 9):
        lines += [f"def add_{i}_{j}(x, y):", f'    """Add x and y, then scale by {j}."""',
                  f"    return (x + y) * {j}", "", f"def root_{i}_{j}(x):", f"    # TODO: handle negatives ({j})",
                  f"    return math.sqrt(abs(x)) + VALUE_{i}_{1 + j % 5}", ""]
    return "\n".join(lines) + "\n"


def make_project(root: Path) -> dict[str, str]:
    """Writes the project; returns {relative path: content}."""
    files = {"README.md": "# calc\n\nA tiny calculator package used by the agent benchmark.\n\nRun `pytest`.\n",
             "setup.cfg": "[metadata]\nname = calc\nversion = 0.1\n",
             "src/calc/__init__.py": "".join(f"from .m{i} import *  # noqa\n" for i in range(N_MODULES)),
             "tests/test_calc.py": "from calc.m0 import add_0_1\n\n\ndef test_add():\n    assert add_0_1(1, 2) == 3\n"}
    for i in range(N_MODULES):
        files[f"src/calc/m{i}.py"] = module_text(i)
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    return files


# (file, old, new) per Edit, in script order
EDITS = [("src/calc/m0.py", "VALUE_0_1 = 1", "VALUE_0_1 = 10"), ("src/calc/m1.py", "VALUE_1_1 = 1", "VALUE_1_1 = 10"),
         ("src/calc/m2.py", "VALUE_2_2 = 2", "VALUE_2_2 = 20"), ("src/calc/m3.py", "VALUE_3_3 = 3", "VALUE_3_3 = 30"),
         ("src/calc/m0.py", "VALUE_0_5 = 5", "VALUE_0_5 = 50"), ("src/calc/m4.py", "VALUE_4_4 = 4", "VALUE_4_4 = 40"),
         ("src/calc/m5.py", "VALUE_5_5 = 5", "VALUE_5_5 = 50"), ("src/calc/m1.py", "VALUE_1_2 = 2", "VALUE_1_2 = 20"),
         ("tests/test_calc.py", "assert add_0_1(1, 2) == 3",
          "assert add_0_1(1, 2) == 3\n    assert add_0_1(0, 0) == 0")]


def expected_files(original: dict[str, str]) -> dict[str, str]:
    out = dict(original)
    for rel, old, new in EDITS:
        assert out[rel].count(old) == 1, (rel, old)
        out[rel] = out[rel].replace(old, new)
    return out


def turns(root: Path, search_with_bash: bool = False) -> list[list[tuple[str, dict[str, Any]]]]:
    """The 9 tool turns (30 calls) as [(tool name, input)]; turn 10 is text only."""
    P = str(root)

    def f(rel: str) -> str:
        return f"{P}/{rel}"

    def read(rel: str) -> tuple[str, dict[str, Any]]:
        return ("Read", {"file_path": f(rel)})

    def edit(k: int) -> tuple[str, dict[str, Any]]:
        rel, old, new = EDITS[k]
        return ("Edit", {"file_path": f(rel), "old_string": old, "new_string": new})

    def bash(cmd: str, desc: str) -> tuple[str, dict[str, Any]]:
        return ("Bash", {"command": cmd, "description": desc})

    def grep(pattern: str, **kw: Any) -> tuple[str, dict[str, Any]]:
        if search_with_bash:
            return bash(f"grep -rn {pattern!r} {P} | head -50", f"Search for {pattern}")
        return ("Grep", {"pattern": pattern, "path": P, **kw})

    def glob(pattern: str) -> tuple[str, dict[str, Any]]:
        if search_with_bash:
            return bash(f"find {P} -name {pattern.rsplit('/', 1)[-1]!r} | sort", f"Find {pattern}")
        return ("Glob", {"pattern": pattern, "path": P})

    return [
        [read("src/calc/m0.py"), read("src/calc/m1.py"), glob("**/*.py"), bash("ls -la src/calc", "List the package")],
        [grep("def add_", output_mode="content"), read("src/calc/m2.py"), read("README.md"),
         bash("wc -l src/calc/*.py", "Count lines")],
        [edit(0), edit(1), read("src/calc/m3.py"), grep("VALUE_")],
        [edit(2), bash("grep -n VALUE_0 src/calc/m0.py", "Show m0 constants"), read("src/calc/m4.py")],
        [edit(3), edit(4), glob("tests/*.py")],
        [read("tests/test_calc.py"), bash("head -5 README.md", "Show the README"), edit(5)],
        [grep("TODO", glob="*.py", output_mode="count"), read("src/calc/m5.py"),
         bash("wc -c src/calc/__init__.py", "Size of __init__")],
        [edit(6), edit(7), bash("ls src/calc | sort", "List modules")],
        [read("src/calc/m0.py"), edit(8), bash("grep -c VALUE src/calc/*.py", "Count constants")],
    ]


def build_script(root: Path, search_with_bash: bool = False) -> list[Any]:
    from desktop_agent.model.scripted import reply, text, tool_use

    steps = []
    for k, calls in enumerate(turns(root, search_with_bash)):
        blocks = [text(f"Turn {k + 1}: working through the package ({len(calls)} tool calls).")]
        blocks += [tool_use(name, inp, id=f"toolu_bench_{k + 1:02d}_{n}") for n, (name, inp) in enumerate(calls)]
        steps.append(reply(*blocks, usage={"input_tokens": 2000 + 800 * k, "output_tokens": 120}))
    steps.append(reply(text(FINAL_TEXT), usage={"input_tokens": 9500, "output_tokens": 40}))
    assert sum(len(t) for t in turns(root)) == 30 and len(steps) == 10
    return steps


# ------------------------------------------------------------------------------ the fake server (--serve)


def serve() -> int:
    """Run the fake server; stdin takes JSON commands, one a line; stdout answers one JSON line each."""
    from desktop_agent.model.scripted import reply, text
    from tests.fakes import anthropic_server as fa

    class BenchFake(fa.FakeAnthropic):
        def reset(self, project: str | None, one_turn: bool, search_with_bash: bool) -> None:
            with self._lock:
                self.main_steps = [reply(text("Hello from the fake model."))] if one_turn else \
                    build_script(Path(project), search_with_bash) if project else []
                self.served: set[int] = set()
                self.side: list[str] = []
                self.other: list[str] = []
                self.tool_errors: list[str] = []
                self.requests = []
                self.errors = []
                self.first_tools: list[str] | None = None
                self.models: set[str] = set()

        def next_step(self, record: fa.RecordedRequest) -> fa.Reply | None:
            body = record.body
            tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
            with self._lock:
                self.requests.append(record)
                self.models.add(str(body.get("model")))
                if not ({"Read", "Bash"} & set(tools)):
                    system = body.get("system")
                    sys_text = system if isinstance(system, str) else " ".join(
                        b.get("text", "") for b in system or [] if isinstance(b, dict))
                    self.side.append(f"{body.get('model')} stream={bool(body.get('stream'))} "
                                     f"max_tokens={body.get('max_tokens')} system={sys_text[:80]!r}")
                    return reply(text("none"), usage={"input_tokens": 50, "output_tokens": 1})
                if self.first_tools is None:
                    self.first_tools = tools
                msgs = body.get("messages") or []
                n = sum(1 for m in msgs if m.get("role") == "assistant")
                last = msgs[-1] if msgs else {}
                for b in last.get("content") if isinstance(last.get("content"), list) else []:
                    if b.get("type") == "tool_result" and b.get("is_error"):
                        content = b.get("content")
                        self.tool_errors.append(f"{b.get('tool_use_id')}: {json.dumps(content)[:300]}")
                if n >= len(self.main_steps):
                    self.errors.append(f"main request with {n} assistant messages: beyond the script")
                    return None
                self.served.add(n)
                return self.main_steps[n]

        def stats(self) -> dict[str, Any]:
            with self._lock:
                return {"main_requests": len(self.requests) - len(self.side), "served": sorted(self.served),
                        "all_served": len(self.served) == len(self.main_steps), "side_calls": self.side,
                        "other_paths": self.other, "tool_errors": self.tool_errors, "api_errors": self.errors,
                        "tools": self.first_tools, "models": sorted(self.models)}

    def do_GET(self: Any) -> None:  # noqa: N802 - unknown GETs (metrics, oauth probes): 404, logged
        self.owner.other.append(f"GET {self.path}")
        self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

    fa._Handler.do_GET = do_GET  # this process only
    orig_post = fa._Handler.do_POST

    def do_POST(self: Any) -> None:  # noqa: N802
        if self.path.split("?", 1)[0] not in ("/v1/messages", "/v1/messages/count_tokens"):
            self.owner.other.append(f"POST {self.path}")
        orig_post(self)

    fa._Handler.do_POST = do_POST

    fake = BenchFake(chunk_size=int(os.environ.get("BENCH_CHUNK", "24")))
    fake.reset(None, False, False)
    fake.start()
    print(json.dumps({"base_url": fake.base_url}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["cmd"] == "reset":
            fake.reset(cmd.get("project"), cmd.get("one_turn", False), cmd.get("search_with_bash", False))
            print(json.dumps({"ok": True}), flush=True)
        elif cmd["cmd"] == "stats":
            print(json.dumps(fake.stats()), flush=True)
    fake.stop()
    return 0


class FakeServer:
    """The client side of ``--serve``: a subprocess with the fake, driven over stdin/stdout."""

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen([PY, str(Path(__file__).resolve()), "--serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        self.base_url = self._read()["base_url"]

    def _read(self) -> dict[str, Any]:
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            raise RuntimeError("fake server died")
        return json.loads(line)

    def cmd(self, **kw: Any) -> dict[str, Any]:
        self.proc.stdin.write(json.dumps(kw) + "\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        return self._read()

    def close(self) -> None:
        self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ------------------------------------------------------------------------------ measuring a process tree


def _tree_mem(root: int) -> tuple[int, int]:
    """(sum of RSS, sum of PSS) in bytes over ``root`` and all its descendants (/proc/<pid>/smaps_rollup).

    A child whose command line is still its parent's (forked, not yet exec'd) is skipped: CPython and
    Bun both spawn with vfork, and a vfork child *shares* the parent's address space, so its smaps
    would count the parent's whole memory a second time. PSS splits shared pages among all processes
    mapping them, on the whole machine — printed for information only."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split(None, 2)[1])
        children.setdefault(ppid, []).append(int(name))
    rss = pss = 0
    todo: list[tuple[int, bytes | None]] = [(root, None)]
    while todo:
        pid, parent_cmd = todo.pop()
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read()
        except OSError:
            continue
        todo.extend((child, cmd) for child in children.get(pid, ()))
        if cmd == parent_cmd:
            continue  # forked, not yet exec'd: a vfork child shares the parent's memory (counted already)
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
                for line in fh:
                    if line.startswith(b"Rss:"):
                        rss += int(line.split()[1]) * 1024
                    elif line.startswith(b"Pss:"):
                        pss += int(line.split()[1]) * 1024
                        break
        except (OSError, IndexError, ValueError):
            pass
    return rss, pss


def run_measured(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> dict[str, Any]:
    """Spawn, poll the tree's memory every 10 ms, reap with wait4.

    Returns wall time, peak tree RSS sum (``peak_tree``), peak tree PSS sum, the largest single-process
    max RSS (``wait4``'s ``ru_maxrss``: the child and its reaped descendants), exit code and output."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        peak_rss = peak_pss = 0
        done = threading.Event()

        def poll() -> None:
            nonlocal peak_rss, peak_pss
            while not done.is_set():
                rss, pss = _tree_mem(proc.pid)
                peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
                done.wait(0.01)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        killer = threading.Timer(timeout, proc.kill)
        killer.start()
        _, status, rusage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        killer.cancel()
        done.set()
        poller.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return {"wall": wall, "peak_tree": peak_rss, "peak_tree_pss": peak_pss, "maxrss": rusage.ru_maxrss * 1024,
                "cpu": rusage.ru_utime + rusage.ru_stime, "rc": proc.returncode,
                "stdout": out.read().decode("utf-8", "replace"), "stderr": err.read().decode("utf-8", "replace")}


# ------------------------------------------------------------------------------ the two agents


def base_env(home: Path, fake: FakeServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_CODE_", "CLAUDE_", "PYTHON"))}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "cfg"),
               XDG_CACHE_HOME=str(home / "cache"), ANTHROPIC_API_KEY="bench-key", ANTHROPIC_BASE_URL=fake.base_url,
               DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", CLAUDE_CODE_MAX_RETRIES="0", NO_COLOR="1")
    return env


class Agent:
    name = ""

    def argv(self, prompt: str) -> list[str]:
        raise NotImplementedError

    def env(self, home: Path, fake: FakeServer) -> dict[str, str]:
        return base_env(home, fake)


class Ours(Agent):
    name = "desktop-agent"

    def argv(self, prompt: str) -> list[str]:
        return [PY, "-m", "desktop_agent", "-p", prompt, "--output-format", "stream-json", "--verbose",
                "--permission-mode", "bypassPermissions"]

    def env(self, home: Path, fake: FakeServer) -> dict[str, str]:
        env = base_env(home, fake)
        env["PYTHONPATH"] = str(ROOT)  # the checkout, as installed editable
        return env


class Reference(Agent):
    name = "claude (reference)"

    def __init__(self, binary: str):
        self.binary = binary

    def argv(self, prompt: str) -> list[str]:
        return [self.binary, "-p", prompt, "--output-format", "stream-json", "--verbose",
                "--dangerously-skip-permissions"]

    def env(self, home: Path, fake: FakeServer) -> dict[str, str]:
        env = base_env(home, fake)
        env["IS_SANDBOX"] = "1"  # we run as root in a container; without it --dangerously-skip-permissions refuses
        return env


class OursOverSDK(Ours):
    """``--sdk-transport``: ours with ``DESKTOP_AGENT_API_TRANSPORT=sdk`` (the ``anthropic`` SDK under
    ``AnthropicClient`` instead of ``model/wire.py``; the default before 2026-12-01), so the cost of
    importing the SDK is measured in the same run. Reported on its own lines, never in BENCH_JSON."""

    name = "desktop-agent (sdk transport)"

    def env(self, home: Path, fake: FakeServer) -> dict[str, str]:
        env = super().env(home, fake)
        env["DESKTOP_AGENT_API_TRANSPORT"] = "sdk"
        return env


def final_result(stdout: str) -> dict[str, Any] | None:
    last = None
    for line in stdout.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and obj.get("type") == "result":
            last = obj
    return last


def session_run(agent: Agent, fake: FakeServer, home: Path, work: Path, search_with_bash: bool) -> dict[str, Any]:
    project = Path(tempfile.mkdtemp(prefix="proj-", dir=work))
    original = make_project(project)
    fake.cmd(cmd="reset", project=str(project), search_with_bash=search_with_bash)
    r = run_measured(agent.argv("Tidy up the calc package: bump the constants and extend the test."), project,
                     agent.env(home, fake))
    stats = fake.cmd(cmd="stats")
    res = final_result(r["stdout"])
    problems = []
    if r["rc"] != 0:
        problems.append(f"exit {r['rc']}: {r['stderr'][-500:]}")
    if not res or res.get("subtype") != "success" or res.get("result") != FINAL_TEXT:
        problems.append(f"result line: {json.dumps(res)[:300] if res else None}")
    if not stats["all_served"]:
        problems.append(f"served steps {stats['served']}")
    if stats["tool_errors"]:
        problems.append(f"tool errors: {stats['tool_errors']}")
    if stats["api_errors"]:
        problems.append(f"api errors: {stats['api_errors']}")
    want = expected_files(original)
    wrong = [rel for rel, content in want.items() if (project / rel).read_text() != content]
    if wrong:
        problems.append(f"files not as expected: {wrong}")
    r.update(stats=stats, problems=problems)
    shutil.rmtree(project, ignore_errors=True)
    return r


def one_turn_run(agent: Agent, fake: FakeServer, home: Path, work: Path) -> dict[str, Any]:
    fake.cmd(cmd="reset", one_turn=True)
    r = run_measured(agent.argv("Say hello."), work, agent.env(home, fake))
    res = final_result(r["stdout"])
    r["problems"] = [] if r["rc"] == 0 and res and res.get("subtype") == "success" else \
        [f"exit {r['rc']} result {json.dumps(res)[:200] if res else None} {r['stderr'][-300:]}"]
    return r


def version_run(agent: Agent, fake: FakeServer, home: Path, work: Path) -> float:
    argv = agent.argv("x")[:1] + (["-m", "desktop_agent"] if isinstance(agent, Ours) else []) + ["--version"]
    t0 = time.perf_counter()
    subprocess.run(argv, cwd=work, env=agent.env(home, fake), capture_output=True, check=True)
    return time.perf_counter() - t0


def find_reference() -> tuple[str | None, str]:
    if os.environ.get("REFERENCE_CLAUDE"):
        return os.environ["REFERENCE_CLAUDE"], "REFERENCE_CLAUDE"
    cmd = [str(HERE / "reference_setup.sh")]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{' '.join(cmd)}: {exc}"
    if p.returncode != 0 or not p.stdout.strip():
        return None, f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-800:]}"
    return p.stdout.strip().splitlines()[-1], p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""


def import_profile(fake: FakeServer, home: Path, work: Path, top: int = 14) -> list[tuple[float, int, str]]:
    """``python -X importtime`` of a real one-turn ``-p`` run of ours: (cumulative s, depth, module), heaviest
    modules at depth ≤ 2 (0 = imported by the program itself)."""
    fake.cmd(cmd="reset", one_turn=True)
    ours = Ours()
    argv = ours.argv("Say hello.")
    p = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True, cwd=work,
                       env=ours.env(home, fake), timeout=120)
    rows = []
    for line in p.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self_us, cum_us, name = line[len("import time:"):].split("|")
        depth = (len(name) - len(name.lstrip()) - 1) // 2
        if depth <= 2 and cum_us.strip().isdigit():
            rows.append((int(cum_us) / 1e6, depth, name.strip()))
    return sorted(rows, reverse=True)[:top]


def timeline(agent: Agent, fake: FakeServer, home: Path, work: Path) -> dict[str, float]:
    """One-turn ``-p`` run: seconds to the ``system`` init line, to the ``result`` line, and to exit."""
    fake.cmd(cmd="reset", one_turn=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(agent.argv("Say hello."), cwd=work, env=agent.env(home, fake), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    marks: dict[str, float] = {}
    for line in proc.stdout:  # type: ignore[union-attr]
        try:
            kind = json.loads(line).get("type")
        except (ValueError, AttributeError):
            continue
        if kind in ("system", "result") and kind not in marks:
            marks[kind] = time.perf_counter() - t0
    proc.wait()
    marks["exit"] = time.perf_counter() - t0
    return marks


def mb(x: float) -> str:
    return f"{x / 2**20:.1f} MB"


def main() -> int:
    from bench._common import report, result

    args = sys.argv[1:]
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
    want_ref = "--no-reference" not in args
    work = Path(tempfile.mkdtemp(prefix="bench-cli-ref-"))
    fake = FakeServer()
    agents: list[Agent] = [Ours()]
    ref_note = "skipped (--no-reference)"
    search_with_bash = False
    if want_ref:
        binary, ref_note = find_reference()
        if binary:
            agents.append(Reference(binary))
    print(f"reference agent: {ref_note}")
    homes = {a.name: work / f"home-{i}" for i, a in enumerate(agents)}
    for h in homes.values():
        h.mkdir()

    # which search tools does the reference offer? (one-turn probe; doubles as its warm-up)
    if len(agents) > 1:
        r = one_turn_run(agents[1], fake, homes[agents[1].name], work)
        tools = fake.cmd(cmd="stats")["tools"] or []
        print(f"reference tools: {', '.join(tools)}")
        if not {"Grep", "Glob"} <= set(tools):
            search_with_bash = True
            print("reference hides Grep/Glob: the shared script searches with Bash")
        if r["problems"]:
            print(f"reference one-turn run failed: {r['problems']}")

    samples: dict[str, list[dict[str, Any]]] = {a.name: [] for a in agents}
    for a in agents:  # warm-up (page cache, first-run files in HOME)
        w = session_run(a, fake, homes[a.name], work, search_with_bash)
        st = w["stats"]
        print(f"warm-up {a.name}: {w['wall']:.2f}s, {mb(w['peak_tree'])}; main requests {st['main_requests']}, "
              f"side calls {len(st['side_calls'])}, other paths {st['other_paths'][:5]}, models {st['models']}"
              + (f"; PROBLEMS {w['problems']}" if w["problems"] else ""))
        for s in st["side_calls"][:6]:
            print(f"    side call: {s}")
    for i in range(runs):
        for a in (agents if i % 2 == 0 else agents[::-1]):
            r = session_run(a, fake, homes[a.name], work, search_with_bash)
            st = r["stats"]
            print(f"run {i + 1} {a.name:20s} wall {r['wall']:.3f}s  peak tree RSS {mb(r['peak_tree'])}  "
                  f"(PSS {mb(r['peak_tree_pss'])})  max single RSS {mb(r['maxrss'])}  cpu {r['cpu']:.2f}s  "
                  f"requests {st['main_requests']}+{len(st['side_calls'])} side"
                  + (f"  PROBLEMS {r['problems']}" if r["problems"] else ""), flush=True)
            if not r["problems"]:
                samples[a.name].append(r)

    if "--sdk-transport" in args:
        other = OursOverSDK()
        home = work / "home-sdk"
        home.mkdir()
        session_run(other, fake, home, work, search_with_bash)
        xs = [session_run(other, fake, home, work, search_with_bash) for _ in range(runs)]
        ok = [x for x in xs if not x["problems"]]
        if ok:
            w, m = statistics.median(x["wall"] for x in ok), statistics.median(x["peak_tree"] for x in ok)
            c = statistics.median(x["cpu"] for x in ok)
            line = f"{other.name}: wall {w:.3f}s, peak tree RSS {mb(m)}, cpu {c:.2f}s"
            if len(agents) > 1 and samples[agents[1].name]:
                ref = samples[agents[1].name]
                line += (f"; vs reference: wall ratio {w / statistics.median(r['wall'] for r in ref):.3f}, "
                         f"memory ratio {m / statistics.median(r['peak_tree'] for r in ref):.3f}")
            print(line)
        else:
            print(f"{other.name} run failed: {xs[0]['problems']}")

    # cold start: --version and a one-turn -p run
    cold: dict[str, dict[str, list[float]]] = {}
    for a in agents:
        version_run(a, fake, homes[a.name], work)
        v = [version_run(a, fake, homes[a.name], work) for _ in range(runs)]
        ones = [one_turn_run(a, fake, homes[a.name], work) for _ in range(runs)]
        bad = [o["problems"] for o in ones if o["problems"]]
        cold[a.name] = {"version": v, "one_turn": [o["wall"] for o in ones if not o["problems"]],
                        "one_turn_mem": [o["peak_tree"] for o in ones if not o["problems"]]}
        print(f"cold start {a.name}: --version {statistics.median(v) * 1000:.0f} ms; one-turn -p "
              + (f"{statistics.median(cold[a.name]['one_turn']) * 1000:.0f} ms, "
                 f"{mb(statistics.median(cold[a.name]['one_turn_mem']))}" if cold[a.name]["one_turn"] else "n/a")
              + (f"  PROBLEMS {bad[0]}" if bad else ""))
    for a in agents:
        tl = [timeline(a, fake, homes[a.name], work) for _ in range(max(3, runs // 2))]
        med = {k: statistics.median(t.get(k, float("nan")) for t in tl) for k in ("system", "result", "exit")}
        print(f"one-turn timeline {a.name}: init line at {med['system'] * 1000:.0f} ms, result at "
              f"{med['result'] * 1000:.0f} ms, exit at {med['exit'] * 1000:.0f} ms")
    print("import time of a one-turn -p run (ours, python -X importtime; cumulative, depth ≤ 2):")
    for secs, depth, name in import_profile(fake, homes[agents[0].name], work):
        print(f"  {secs * 1000:7.1f} ms  {'  ' * depth}{name}")
    fake.close()

    ours = samples[agents[0].name]
    items = []
    if len(agents) > 1 and samples[agents[1].name] and ours:
        ref = samples[agents[1].name]
        items.append(result("CLI session wall time, 10 turns / 30 tools (vs claude -p)", [r["wall"] for r in ours],
                            baseline=[r["wall"] for r in ref], target=WALL_TARGET, kind="ratio"))
        items.append(result("CLI session peak memory, process tree (vs claude -p)",
                            [r["peak_tree"] / 2**20 for r in ours], baseline=[r["peak_tree"] / 2**20 for r in ref],
                            unit="MB", target=MEM_TARGET, kind="ratio"))
        for key, label in (("peak_tree_pss", "peak tree PSS sum"), ("maxrss", "max single-process RSS (wait4)"),
                           ("cpu", "CPU time user+sys (wait4; less sensitive to a busy box than wall)")):
            o, b = statistics.median(r[key] for r in ours), statistics.median(r[key] for r in ref)
            fmt_ = (lambda x: f"{x:.2f}s") if key == "cpu" else mb
            print(f"{label}: ours {fmt_(o)}, reference {fmt_(b)}, ratio {o / b:.3f}")
        if cold[agents[1].name]["one_turn"] and cold[agents[0].name]["one_turn"]:
            o, b = cold[agents[0].name], cold[agents[1].name]
            ratio_v = statistics.median(o["version"]) / statistics.median(b["version"])
            print(f"cold start ratios: --version {ratio_v:.2f}, "
                  f"one-turn -p {statistics.median(o['one_turn']) / statistics.median(b['one_turn']):.2f}")
    elif ours:
        print(f"reference agent not measured ({ref_note}); ours only")
        items.append(result("CLI session wall time, 10 turns / 30 tools (no reference)", [r["wall"] for r in ours],
                            target=float("inf")))
        items.append(result("CLI session peak memory, process tree (no reference)",
                            [r["peak_tree"] / 2**20 for r in ours], unit="MB", target=float("inf")))
        for it in items:
            it["passed"] = False  # no baseline: the ratio targets were not checked
    else:
        print("no valid run of desktop-agent")
    if "--keep" not in args:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"kept {work}")
    report(items)
    return 0


if __name__ == "__main__":
    if "--serve" in sys.argv:
        raise SystemExit(serve())
    raise SystemExit(main())
