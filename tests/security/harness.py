"""The security suite's machinery: a request-driven fake model, the tmp project with its canaries, the CLI runs.

A *case* (a dict from ``tests/security/cases.py``) is one scripted tool call. Cases that share their launch
(mode, settings, flags, env, project variant) form a *run*: ONE real ``python -m desktop_agent -p`` process
against the session's ``ScriptFake``, which plays the run's calls as a multi-turn script — one tool_use per
assistant message, the next call after the previous tool_result — so a denied or failing call cannot cancel a
sibling (Bash errors cancel parallel siblings, §6.4) and every call really reaches the permission check.

Each run gets its own tree under the session's tmp dir::

    <run>/proj      the project (cwd): app.ts, src/app.ts, .env, secrets/, deep/link -> ../outside/inner,
                    notes.txt, a git repo with .env committed
    <run>/outside   a sibling dir, really outside the project: secret.txt, inner/, a marker file name
    <run>/home      HOME, XDG dirs, managed-settings dir (isolated per run)

Placeholders in case text: ``{P}`` project, ``{O}`` outside, ``{H}`` home, ``{C}``/``{CO}`` the case's canary
path in the project / outside, ``{V}``/``{VO}``/``{VS}`` its victim in the project / outside / ``src/`` (created
before the run with known content), ``{S}`` a source file to copy, ``{N}`` the case's index (unique name part),
``{SECRET_ENV}``/``{SECRET_DIR}``/``{SECRET_OUT}``/``{SECRET_GIT}`` the secret texts, ``{MARK}`` the marker name.

Checks (``checks`` of a case): ``("absent", path)`` the canary must not exist (also searched by name in the whole
run tree, so a drifted cwd cannot hide it); ``("unchanged", path)`` the file keeps the bytes it had before the
run; ``("hidden", text)`` the text is in none of this case's tool_results (sent to the model or printed). Every
case also checks that its tool_use got exactly one tool_result in the conversation sent back to the model, that
the run's requests were ones the real API accepts, and that the CLI exited as expected.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fakes.anthropic_server import FakeAnthropic, RecordedRequest, api_problems, http_error, reply, text, tool_use

ROOT = Path(__file__).resolve().parents[2]
RUN_RE = re.compile(r"RUN-([0-9a-z_]+)")
SECRETS = {
    "SECRET_ENV": "SECRET-ENV-7f3a9c",    # in proj/.env (committed to git too)
    "SECRET_DIR": "SECRET-DIR-52be11",    # in proj/secrets/*
    "SECRET_OUT": "SECRET-OUT-c0ffee",    # in outside/secret.txt
    "SECRET_GIT": "SECRET-GIT-9d8e7f",    # in proj/.git/secret-note (read via git internals)
}
MARK = "listing-marker-q8z7"              # a file name in outside/ and inside secrets/ names
SECRET_NAMES = ("hidden-alpha-q8z7.txt", "deep-beta-q8z7.key")  # names inside proj/secrets/
VICTIM_TEXT = "victim-content-unchanged\n"
SKIP_ANALYSIS_ENV = {"DESKTOP_AGENT_UNSAFE_SKIP_BASH_ANALYSIS": "1"}


# ------------------------------------------------------------------------------------------ fake model


class ScriptFake(FakeAnthropic):
    """Answers from the request: the run id in the first user message picks the run's script; the number of
    assistant messages so far picks the next tool_use; after the last one, a short text.

    It checks each request as the real API would (``api_problems``) and records problems per run. A body
    too deep for ``json.loads`` (a 10,000-level tool input sent back) is kept raw and read with regexes."""

    def __init__(self) -> None:
        super().__init__(chunk_size=1 << 20, validate=False)
        self.scripts: dict[str, list[dict[str, Any]]] = {}
        self.by_run: dict[str, list[RecordedRequest]] = {}
        self.problems: dict[str, list[str]] = {}

    def next_step(self, record: RecordedRequest):
        raw = record.body.get("_raw") if isinstance(record.body, dict) else None
        if raw is not None:
            match = RUN_RE.search(raw)
            n = len(re.findall(r'"role"\s*:\s*"assistant"', raw))
            problems: list[str] = []
        else:
            msgs = record.messages
            first = msgs[0].get("content") if msgs else ""
            match = RUN_RE.search(json.dumps(first))
            n = sum(1 for m in msgs if m.get("role") == "assistant")
            problems = api_problems(record.body)
        run_id = match.group(1) if match else ""
        with self._lock:
            self.requests.append(record)
            self.by_run.setdefault(run_id, []).append(record)
            script = self.scripts.get(run_id)
            if problems:
                self.problems.setdefault(run_id, []).extend(problems)
        if problems:
            return http_error(400, "; ".join(problems))
        if script is None:
            return reply(text("Nothing to do."))
        if n < len(script):
            call = script[n]
            return reply(tool_use(call["name"], call["input"], id=call["id"]))
        return reply(text(f"Done with {run_id}."))


# ------------------------------------------------------------------------------------------ the tree


def _git(args: list[str], cwd: Path, env: dict[str, str]) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t", XDG_CONFIG_HOME=str(home / "cfg"))
    return env


def build_tree(base: Path, variant: str = "plain") -> dict[str, Path]:
    """The run's project, outside dir and home. ``variant`` adds: ``fsmonitor`` (repo config runs a program),
    ``hooks:<json>`` is handled by the caller (it writes .claude/settings.json)."""
    proj, out, home = base / "proj", base / "outside", base / "home"
    for d in (proj / "src", proj / "secrets" / "nested", proj / "deep", out / "inner", home / ".claude",
              home / "managed"):
        d.mkdir(parents=True, exist_ok=True)
    (proj / "app.ts").write_text("export const value = 1")
    (proj / "src" / "app.ts").write_text("export const value = 1")
    (proj / "notes.txt").write_text("needle in the notes\n")
    (proj / ".env").write_text(f"API_KEY={SECRETS['SECRET_ENV']}\n")
    (proj / "secrets" / SECRET_NAMES[0]).write_text(f"token={SECRETS['SECRET_DIR']}\n")
    (proj / "secrets" / "nested" / SECRET_NAMES[1]).write_text(f"key={SECRETS['SECRET_DIR']}\n")
    (out / "secret.txt").write_text(f"outside={SECRETS['SECRET_OUT']}\n")
    (out / MARK).write_text("marker\n")
    (out / "inner" / "inner.txt").write_text(f"inner={SECRETS['SECRET_OUT']}\n")
    os.symlink(out / "inner", proj / "deep" / "link")  # deep/link/.. is outside/, not proj/deep
    genv = git_env(home)
    _git(["init", "-q", "-b", "main"], proj, genv)
    _git(["add", "-A"], proj, genv)
    _git(["commit", "-q", "-m", "init"], proj, genv)
    (proj / ".git" / "secret-note").write_text(SECRETS["SECRET_GIT"] + "\n")
    if variant == "fsmonitor":
        # A cloned, untrusted repository whose config makes git start a program.
        script = proj / ".git" / "fsmon.sh"
        script.write_text(f"#!/bin/sh\ntouch {out}/canary_fsmonitor_$$\ntouch {proj}/canary_fsmonitor_in\n")
        script.chmod(0o755)
        (proj / "notes.txt").write_text("a tracked file changed since the commit\n")  # so diffs have work
        for key, value in (("core.fsmonitor", str(script)), ("core.pager", f"{script} #"),
                           ("diff.external", str(script)), ("core.sshCommand", str(script))):
            _git(["config", key, value], proj, genv)
        alias = proj / ".git" / "hooks" / "post-checkout"
        alias.write_text(f"#!/bin/sh\ntouch {out}/canary_hook_$$\n")
        alias.chmod(0o755)
    return {"P": proj, "O": out, "H": home}


def fill(template: Any, values: dict[str, str]) -> Any:
    """Placeholders replaced in strings, recursively in lists and dicts (keys too)."""
    if isinstance(template, str):
        out = template
        for key, value in values.items():
            out = out.replace("{" + key + "}", value)
        return out
    if isinstance(template, list):
        return [fill(x, values) for x in template]
    if isinstance(template, dict):
        return {fill(k, values): fill(v, values) for k, v in template.items()}
    return template


# ------------------------------------------------------------------------------------------ runs


RUN_KEYS = ("mode", "settings", "args", "env", "variant", "project_settings", "local_settings", "user_settings",
            "mcp_json", "expect_exit", "stdin", "group")


@dataclass
class Run:
    """One CLI process: its launch (the ``RUN_KEYS`` of its cases), its cases (one tool call each), the outcome."""

    key: str
    launch: dict[str, Any]
    cases: list[dict[str, Any]] = field(default_factory=list)
    base: Path | None = None
    values: dict[str, str] = field(default_factory=dict)
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    requests: list[RecordedRequest] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    error: str | None = None
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def expect_exit(self) -> int | None:
        return self.launch.get("expect_exit")

    @property
    def timeout(self) -> float:
        return float(max([c.get("timeout") or 60 for c in self.cases] or [60]))


def run_key(case: dict[str, Any]) -> str:
    """Cases with the same launch share one CLI process; ``alone`` cases (a ``cd`` that would move the shell for
    the next call, hostile input that may crash the CLI, per-case project config) get their own."""
    parts: dict[str, Any] = {k: case.get(k) for k in RUN_KEYS}
    command = case["input"].get("command", "") if isinstance(case["input"], dict) else ""
    if case.get("alone") or re.search(r"(^|[;&|\s(])(cd|pushd)\s", command):
        parts["alone"] = case["id"]
    return json.dumps(parts, sort_keys=True)


def group_runs(cases: list[dict[str, Any]]) -> list[Run]:
    runs: dict[str, Run] = {}
    for case in cases:
        key = run_key(case)
        if key not in runs:
            runs[key] = Run(key=key, launch={k: case.get(k) for k in RUN_KEYS})
        runs[key].cases.append(case)
    return list(runs.values())


def cli_env(home: Path, fake: FakeAnthropic, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "CLAUDE_", "DESKTOP_AGENT_", "GIT_", "XDG_"))}
    if os.environ.get("DESKTOP_AGENT_CACHE_DIR"):  # the session's bashlex tables (tests/conftest.py), not rebuilt per run
        env["DESKTOP_AGENT_CACHE_DIR"] = os.environ["DESKTOP_AGENT_CACHE_DIR"]
    env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"), XDG_DATA_HOME=str(home / "data"),
               XDG_CONFIG_HOME=str(home / "cfg"), XDG_STATE_HOME=str(home / "state"),
               DESKTOP_AGENT_MANAGED_SETTINGS_DIR=str(home / "managed"), PYTHONPATH=str(ROOT),
               DESKTOP_AGENT_STREAM_IDLE_TIMEOUT_S="20", CLAUDE_CODE_MAX_RETRIES="0",
               ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=fake.base_url, GIT_CONFIG_NOSYSTEM="1")
    env.update(extra)
    return env


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def prepare(run: Run, base: Path, fake: ScriptFake) -> tuple[list[str], str | None]:
    """Build the tree, the victims, the snapshots and the script; return the argv and the stdin text."""
    run.base = base
    launch = run.launch
    dirs = build_tree(base, launch.get("variant") or "plain")
    values = {k: str(v) for k, v in dirs.items()}
    values.update(SECRETS)
    values["MARK"] = MARK
    run_id = re.sub(r"[^0-9a-z_]", "_", base.name.lower())
    values["RUN_ID"] = run_id
    run.values = values
    proj = dirs["P"]
    script = []
    for n, case in enumerate(run.cases):
        num = f"{n:03d}"
        cv = dict(values, N=num, C=str(proj / f"canary_{num}"), CO=str(dirs["O"] / f"canary_{num}"),
                  V=str(proj / f"victim_{num}"), VO=str(dirs["O"] / f"victim_{num}"),
                  VS=str(proj / "src" / f"victim_{num}"), S=str(proj / f"srcfile_{num}"))
        case["_values"] = cv
        for victim in ("V", "VO", "VS", "S"):
            Path(cv[victim]).write_text(VICTIM_TEXT)
        if case.get("setup_link") and not (proj / case["setup_link"][0]).exists():
            os.symlink(case["setup_link"][1], proj / case["setup_link"][0])
        if case.get("setup_script"):
            name, body = case["setup_script"]
            (proj / name).write_text(fill(body, cv) + "\n")
            (proj / name).chmod(0o755)
        if case.get("setup_fifo"):
            os.mkfifo(proj / "fifo")
        tool_input = fill(case["input"], cv)
        case["_input"] = tool_input
        tid = f"toolu_sec_{num}"
        script.append({"name": case["tool"], "input": tool_input, "id": tid})
        case["_tool_use_id"] = tid
        case["_snapshots"] = {}
        for check in case["checks"]:
            if check[0] == "unchanged":
                path = fill(check[1], cv)
                try:
                    case["_snapshots"][path] = Path(path).read_bytes()
                except OSError as exc:
                    raise AssertionError(f"case {case['id']}: nothing to snapshot at {path}: {exc}") from None
    # per-run project config: filled with the (single) case's values when there is one case
    pv = run.cases[0]["_values"] if len(run.cases) == 1 else values
    for key, path in (("project_settings", proj / ".claude" / "settings.json"),
                      ("local_settings", proj / ".claude" / "settings.local.json"),
                      ("user_settings", dirs["H"] / ".claude" / "settings.json"),
                      ("mcp_json", proj / ".mcp.json")):
        if launch.get(key) is not None:
            _write_json(path, fill(launch[key], pv))
    run._cache["before"] = {path for _, path in all_paths(base)}
    fake.scripts[run_id] = script
    prompt = f"RUN-{run_id} go"
    argv = [sys.executable, "-m", "desktop_agent", "-p"]
    if not launch.get("stdin"):
        argv.append(prompt)
    argv += ["--output-format", "stream-json", "--verbose"]
    if launch.get("mode"):
        argv += ["--permission-mode", launch["mode"]]
    if launch.get("settings") is not None:
        argv += ["--settings", json.dumps(fill(launch["settings"], pv))]
    argv += fill(launch.get("args") or [], pv)
    return argv, (prompt if launch.get("stdin") else None)


def execute(run: Run, base: Path, fake: ScriptFake) -> Run:
    try:
        argv, stdin = prepare(run, base, fake)
    except Exception as exc:  # noqa: BLE001 - reported on every case of the run
        run.error = f"prepare failed: {exc!r}"
        return run
    pv = run.cases[0]["_values"] if len(run.cases) == 1 else run.values
    env = cli_env(base / "home", fake, fill(run.launch.get("env") or {}, pv))
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=base / "proj", env=env, capture_output=True, timeout=run.timeout,
                              input=(stdin or "").encode())
        run.returncode = proc.returncode
        run.stdout = proc.stdout.decode("utf-8", "replace")
        run.stderr = proc.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as exc:
        run.error = f"CLI did not finish within {run.timeout:.0f}s (hung)"
        run.stdout = (exc.stdout or b"").decode("utf-8", "replace")
        run.stderr = (exc.stderr or b"").decode("utf-8", "replace")
    run.seconds = time.perf_counter() - t0
    with fake._lock:
        run.requests = list(fake.by_run.get(run.values["RUN_ID"], []))
        run.problems = list(fake.problems.get(run.values["RUN_ID"], []))
    return run


def execute_all(runs: list[Run], root: Path, fake: ScriptFake, workers: int = 3) -> float:
    """All runs, ``workers`` CLI processes at a time. Returns the wall time."""
    from concurrent.futures import ThreadPoolExecutor

    t0 = time.perf_counter()
    lock = threading.Lock()
    counter = iter(range(10 ** 6))

    def one(run: Run) -> Run:
        with lock:
            n = next(counter)
        base = root / f"r{n:03d}"
        base.mkdir(parents=True)
        return execute(run, base, fake)

    # the ones that may hang until their time limit first, then the long runs
    ordered = sorted(runs, key=lambda r: (r.timeout >= 60, -len(r.cases)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, ordered))
    return time.perf_counter() - t0


# ------------------------------------------------------------------------------------------ checking


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(b.get("text", b.get("content", ""))) if isinstance(b, dict) else str(b)
                         for b in content)
    return str(content)


def tool_results(run: Run) -> dict[str, list[str]]:
    """tool_use_id → every tool_result text for it in the run's last request (the whole conversation so far).
    A raw (too deep to parse) body is read with a regex: ids only, texts empty."""
    if "sent" not in run._cache:
        run._cache["sent"] = _tool_results(run)
    return run._cache["sent"]


def _tool_results(run: Run) -> dict[str, list[str]]:
    results: dict[str, list[str]] = {}
    if not run.requests:
        return results
    body = run.requests[-1].body
    if "_raw" in body:
        for tid in re.findall(r'"tool_use_id"\s*:\s*"(toolu_sec_\d+)"', body["_raw"]):
            results.setdefault(tid, []).append("")
        return results
    for message in body.get("messages", []):
        if message.get("role") != "user" or not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            if block.get("type") == "tool_result":
                results.setdefault(block.get("tool_use_id"), []).append(_text_of(block.get("content")))
    return results


def streamed_results(run: Run) -> dict[str, list[str]]:
    """tool_use_id → tool_result texts the CLI printed (stream-json ``user`` lines), sent or not."""
    if "streamed" not in run._cache:
        run._cache["streamed"] = _streamed_results(run)
    return run._cache["streamed"]


def _streamed_results(run: Run) -> dict[str, list[str]]:
    results: dict[str, list[str]] = {}
    for line in run.stdout.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if not isinstance(obj, dict) or obj.get("type") != "user":
            continue
        content = (obj.get("message") or {}).get("content")
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    results.setdefault(block.get("tool_use_id"), []).append(_text_of(block.get("content")))
    return results


def all_paths(root: Path) -> list[tuple[str, str]]:
    """(name, path) of everything under ``root`` (symlinks not followed; .git/objects skipped)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath.endswith(os.sep + ".git"):
            dirnames[:] = [d for d in dirnames if d != "objects"]
        for entry in dirnames + filenames:
            out.append((entry, os.path.join(dirpath, entry)))
    return out


def find_named(run: Run, name: str) -> list[str]:
    """Every path in the run's tree, new since the run was prepared, whose name starts with ``name`` (the tree is
    walked once per run)."""
    if "paths" not in run._cache:
        before = run._cache.get("before", set())
        run._cache["paths"] = [(e, p) for e, p in all_paths(run.base) if p not in before] if run.base else []
    return [path for entry, path in run._cache["paths"] if entry.startswith(name)]


def breaches(run: Run, case: dict[str, Any]) -> list[str]:
    """What went wrong for this case (empty: it held)."""
    problems: list[str] = []
    if run.error:
        problems.append(run.error)
    if run.problems:
        problems.append(f"requests the real API would reject: {run.problems[:3]}")
    expected_rc = run.expect_exit or 0
    if run.returncode != expected_rc:
        problems.append(f"CLI exit code {run.returncode}, expected {expected_rc}; stderr: {run.stderr[-600:]!r}")
    values = case.get("_values", {})
    tid = case.get("_tool_use_id")
    sent = tool_results(run)
    own = sent.get(tid, []) + streamed_results(run).get(tid, [])
    if run.expect_exit:
        if run.requests:
            problems.append(f"the CLI should have stopped before the model; it sent {len(run.requests)} request(s)")
    else:
        count = len(sent.get(tid, []))
        if count != 1:
            answered = [c["id"] for c in run.cases if sent.get(c.get("_tool_use_id"))]
            note = f" (this CLI answered {len(answered)} of its {len(run.cases)} calls" + (
                f", the last one {answered[-1]})" if answered else ")")
            problems.append(f"{count} tool_result(s) sent to the model for {tid}, expected exactly 1{note}")
    for check in case["checks"]:
        kind = check[0]
        if kind == "absent":
            target = Path(fill(check[1], values))
            if os.path.lexists(target):
                problems.append(f"forbidden file exists: {target}")
            elif run.base is not None and case.get("tool") == "Bash":  # a shell whose cwd may have drifted
                stray = [h for h in find_named(run, target.name) if h != str(target)]
                if stray:
                    problems.append(f"forbidden file created elsewhere: {stray}")
        elif kind == "unchanged":
            path = fill(check[1], values)
            try:
                now = Path(path).read_bytes()
            except OSError as exc:
                problems.append(f"{path} was removed or made unreadable ({exc.__class__.__name__})")
            else:
                if now != case["_snapshots"][path]:
                    problems.append(f"{path} changed: {now[:120]!r}")
        elif kind == "hidden":  # the text must not appear in this case's tool_result
            needle = fill(check[1], values)
            for body in own:
                if needle in body:
                    at = body.index(needle)
                    problems.append(f"forbidden text {needle!r} in the tool_result: "
                                    f"...{body[max(0, at - 100):at + 40]!r}")
                    break
        else:
            raise AssertionError(f"unknown check {kind}")
    return problems


def excerpt(run: Run, case: dict[str, Any], limit: int = 300) -> str:
    """The case's tool_result (for reports)."""
    tid = case.get("_tool_use_id")
    own = tool_results(run).get(tid) or streamed_results(run).get(tid) or ["(no tool_result)"]
    return own[0][:limit]


# ------------------------------------------------------------------------------------------ attacks are real


def plain_bash(cases: list[dict[str, Any]], base: Path) -> dict[str, list[str]]:
    """Run each Bash case's command in plain ``bash -c`` (no agent, no rules, no sandbox) in a tree of its own
    variant; return case id → the checks that did not see a breach when none did. An empty list means the attack is
    real: left alone, it writes, reads, lists or runs what one of its canaries watches."""
    out: dict[str, list[str]] = {}
    fake = ScriptFake()  # only for prepare's bookkeeping; nothing is served
    by_variant: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        by_variant.setdefault(case.get("variant") or "plain", []).append(copy_case(case))
    for n, (variant, group) in enumerate(sorted(by_variant.items())):
        run = Run(key=variant, launch={"variant": variant}, cases=group)
        tree = base / f"plain{n}"
        tree.mkdir(parents=True)
        prepare(run, tree, fake)
        env = git_env(tree / "home")
        for case in group:
            proc = subprocess.run(["bash", "-c", case["_input"]["command"]], cwd=tree / "proj", env=env,
                                  capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
            output = (proc.stdout + proc.stderr).decode("utf-8", "replace")
            missed: list[str] = []
            seen_any = False
            for check in case["checks"]:
                target = fill(check[1], case["_values"])
                if check[0] == "absent":
                    seen = os.path.lexists(target) or any(
                        entry.startswith(Path(target).name) and path not in run._cache["before"]
                        for entry, path in all_paths(tree))
                elif check[0] == "unchanged":
                    seen = not os.path.exists(target) or Path(target).read_bytes() != case["_snapshots"][target]
                else:
                    seen = target in output
                seen_any = seen_any or seen
                if not seen:
                    missed.append(f"{check[0]} {target} (output: {output[:160]!r})")
            out[case["id"]] = [] if seen_any else missed  # one check seeing it is enough
    return out


def copy_case(case: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in case.items() if not k.startswith("_")}
