"""``desktop-agent host`` with the real engine host, over the real socket, against the fake Messages API: a
question asked in a session outlives the client that saw it (kill -9), is sent again to the next client that
attaches and answering it completes the turn; ``--status`` lists the sessions and the questions; ``--stop`` ends
them with valid transcripts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from desktop_agent.host.daemon import control_request
from tests.fakes.anthropic_server import FakeAnthropic, reply, text, tool_use
from tests.host.conftest import HostEnv


class Wire:
    """A raw protocol client on the host's socket (no client library: the bytes the host must understand)."""

    def __init__(self, path: Path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(str(path))
        self.buf = b""
        self.n = 0

    def send(self, obj: dict) -> None:
        self.sock.sendall(json.dumps(obj).encode() + b"\n")

    def request(self, request: dict) -> str:
        self.n += 1
        rid = f"req-{self.n}"
        self.send({"type": "control_request", "request_id": rid, "request": request})
        return rid

    def read(self) -> dict:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise EOFError("the host closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def until(self, pred, what: str) -> dict:
        seen = []
        for _ in range(2000):
            msg = self.read()
            if pred(msg):
                return msg
            seen.append(msg.get("type"))
        raise AssertionError(f"no {what} among {seen}")

    def response_to(self, rid: str) -> dict:
        msg = self.until(lambda m: m.get("type") == "control_response" and m["response"].get("request_id") == rid,
                         f"control_response {rid}")
        assert msg["response"]["subtype"] == "success", msg
        return msg["response"].get("response") or {}

    def question(self) -> dict:
        return self.until(lambda m: m.get("type") == "control_request"
                          and m["request"].get("subtype") == "can_use_tool", "can_use_tool")

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def engine_host(host_env: HostEnv, tmp_path):
    fake = FakeAnthropic()
    fake.__enter__()
    host_env.env.update(ANTHROPIC_API_KEY="sk-ant-test", ANTHROPIC_BASE_URL=fake.base_url,
                        HOME=os.environ["HOME"], XDG_DATA_HOME=os.environ["XDG_DATA_HOME"],
                        XDG_CONFIG_HOME=os.environ["XDG_CONFIG_HOME"],
                        CLAUDE_CONFIG_DIR=os.environ["CLAUDE_CONFIG_DIR"])
    try:
        yield host_env, fake
    finally:
        fake.__exit__(None, None, None)


def _start(host_env: HostEnv) -> subprocess.Popen[bytes]:
    proc = host_env.spawn([sys.executable, "-m", "desktop_agent", "host", "--foreground"])
    host_env.wait_status(timeout=60)
    return proc


def _transcript(path: str) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text("utf-8").splitlines() if line.strip()]


@pytest.fixture
def short_workdir():
    """A folder whose ``out.txt`` path stays under the 80 characters ``--status`` shows whole (``host.service``),
    wherever pytest's temp dir is (a worker's ``popen-gwN/`` makes ``workdir`` longer than that)."""
    d = Path(tempfile.mkdtemp(prefix="da-q-"))
    (d / "app.ts").write_text("export const value = 1")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_a_question_outlives_a_killed_client_and_answering_it_completes_the_turn(engine_host, short_workdir):
    host_env, fake = engine_host
    workdir = short_workdir
    fake.script([reply(tool_use("Write", {"file_path": str(workdir / "out.txt"), "content": "kept\n"},
                                id="toolu_w1")),
                 reply(text("Wrote it."))])
    host = _start(host_env)
    # a client in its own process opens a session, sends a prompt, sees the question, and is killed
    client_code = (
        "import json, socket, sys\n"
        "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile('rwb')\n"
        "def send(o): f.write(json.dumps(o).encode() + b'\\n'); f.flush()\n"
        "send({'type': 'control_request', 'request_id': 'o1', 'request': {'subtype': 'desktop_agent_open',"
        " 'folder': sys.argv[2], 'settings': {'trusted': True}}})\n"
        "sid = None\n"
        "for line in f:\n"
        "    m = json.loads(line)\n"
        "    if m.get('type') == 'control_response' and m['response'].get('request_id') == 'o1':\n"
        "        sid = m['response']['response']['session_id']\n"
        "        send({'type': 'user', 'message': {'role': 'user', 'content': 'write out.txt'}})\n"
        "    if m.get('type') == 'control_request' and m['request'].get('subtype') == 'can_use_tool':\n"
        "        print(sid, m['request_id'], flush=True)\n"
        "        break\n"
        "import time; time.sleep(600)\n"
    )
    client = subprocess.Popen([sys.executable, "-c", client_code, str(host_env.socket), str(workdir)],
                              stdout=subprocess.PIPE, env=host_env.env)
    try:
        assert client.stdout is not None
        session_id, request_id = client.stdout.readline().decode().split()
        client.send_signal(signal.SIGKILL)
        client.wait()
    finally:
        if client.poll() is None:
            client.kill()
    assert host.poll() is None  # the host lives on
    status = control_request("status")
    assert status is not None and [s["session_id"] for s in status["sessions"]] == [session_id]
    assert [(q["session_id"], q["request_id"], q["tool_name"]) for q in status["pending"]] == [
        (session_id, request_id, "Write")]
    text_status = host_env.cli("--status").stdout
    assert "pending questions: 1" in text_status and str(workdir / "out.txt") in text_status
    assert not (workdir / "out.txt").exists()

    # another client attaches: it is sent the same question, answers it, and the turn completes
    wire = Wire(host_env.socket)
    rid = wire.request({"subtype": "desktop_agent_attach", "session_id": session_id})
    assert wire.response_to(rid)["session_id"] == session_id
    question = wire.question()
    assert question["request_id"] == request_id and question["request"]["tool_name"] == "Write"
    wire.send({"type": "control_response", "response": {"subtype": "success", "request_id": request_id,
                                                        "response": {"behavior": "allow"}}})
    result = wire.until(lambda m: m.get("type") == "result", "result")
    assert result["subtype"] == "success" and result["session_id"] == session_id
    assert (workdir / "out.txt").read_text() == "kept\n"
    assert control_request("status")["pending"] == []
    fake.assert_done()
    wire.close()

    stopped = host_env.cli("--stop")
    assert stopped.returncode == 0, stopped.stderr
    assert host.wait(10) == 0
    path = status["sessions"][0]["transcript_path"]
    entries = _transcript(path)
    uses = [b["id"] for e in entries if e.get("type") == "assistant" for b in e["message"]["content"]
            if b.get("type") == "tool_use"]
    results = [b["tool_use_id"] for e in entries
               if e.get("type") == "user" and isinstance(e["message"]["content"], list)
               for b in e["message"]["content"] if b.get("type") == "tool_result"]
    assert uses == results == ["toolu_w1"]


def test_stop_with_a_question_pending_leaves_a_valid_transcript(engine_host, workdir):
    host_env, fake = engine_host
    fake.script([reply(tool_use("Write", {"file_path": str(workdir / "never.txt"), "content": "x"},
                                id="toolu_never"))])
    host = _start(host_env)
    wire = Wire(host_env.socket)
    rid = wire.request({"subtype": "desktop_agent_open", "folder": str(workdir), "settings": {"trusted": True}})
    info = wire.response_to(rid)
    wire.send({"type": "user", "message": {"role": "user", "content": "write never.txt"}})
    wire.question()
    stopped = host_env.cli("--stop")
    assert stopped.returncode == 0, stopped.stderr
    assert host.wait(10) == 0
    assert not (workdir / "never.txt").exists()
    entries = _transcript(info["transcript_path"])
    results = [b for e in entries if e.get("type") == "user" and isinstance(e["message"]["content"], list)
               for b in e["message"]["content"] if b.get("type") == "tool_result"]
    assert [r["tool_use_id"] for r in results] == ["toolu_never"]  # the unanswered call got its result
    assert results[0].get("is_error") is True
    wire.close()
    assert not host_env.socket.exists()


def _drop(wires: list[Wire]) -> None:
    for wire in wires:
        wire.sock.shutdown(socket.SHUT_RDWR)  # as a killed window's socket goes
        wire.close()
    deadline = time.monotonic() + 5
    while control_request("status")["clients"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert control_request("status")["clients"] == 0


def test_five_questions_across_three_sessions_survive_their_clients(engine_host, tmp_path):
    """Three sessions (two in one folder) asking five questions in all (two Writes in one reply ask one after the
    other: the engine asks one question of a session at a time); every client is dropped while questions are
    pending — twice — and each question is sent again to the client that attaches next; answering them completes
    the turns."""
    host_env, fake = engine_host
    folders = [tmp_path / "f1", tmp_path / "f2", tmp_path / "f2"]
    for f in folders:
        f.mkdir(exist_ok=True)
    host = _start(host_env)
    counts = [2, 2, 1]
    wires, sessions = [], []
    for i, (folder, n) in enumerate(zip(folders, counts)):
        # the fake plays its steps in request order: each is scripted just before the request that takes it
        fake.script([reply(*[tool_use("Write", {"file_path": str(folder / f"s{i}-{k}.txt"), "content": f"{i}{k}"},
                                      id=f"toolu_{i}_{k}") for k in range(n)])])
        wire = Wire(host_env.socket)
        info = wire.response_to(wire.request({"subtype": "desktop_agent_open", "folder": str(folder),
                                              "settings": {"trusted": True}}))
        wire.send({"type": "user", "message": {"role": "user", "content": f"write {n} files"}})
        wire.question()
        wires.append(wire)
        sessions.append(info["session_id"])
    asked: list[tuple[str, str]] = []
    remaining = dict(zip(sessions, counts))
    for round_ in range(2):
        status = control_request("status")
        pending = {(q["session_id"], q["request_id"]) for q in status["pending"]}
        assert len(pending) == (3 if round_ == 0 else 2)
        assert sorted(s["session_id"] for s in status["sessions"]) == sorted(sessions)
        _drop(wires)
        status = control_request("status")
        assert {(q["session_id"], q["request_id"]) for q in status["pending"]} == pending  # none lost
        assert f"pending questions: {len(pending)}" in host_env.cli("--status").stdout
        wires = []
        for sid in [s for s in sessions if remaining[s]]:
            wire = Wire(host_env.socket)
            wire.response_to(wire.request({"subtype": "desktop_agent_attach", "session_id": sid}))
            q = wire.question()  # the same question, sent again
            assert (sid, q["request_id"]) in pending
            asked.append((sid, q["request_id"]))
            if remaining[sid] == 1:
                fake.script([reply(text("Done."))])  # the request that follows the last answer
            wire.send({"type": "control_response", "response": {"subtype": "success",
                                                                "request_id": q["request_id"],
                                                                "response": {"behavior": "allow"}}})
            remaining[sid] -= 1
            if remaining[sid]:
                wire.question()  # the session's next question, pending when this client goes
            else:
                assert wire.until(lambda m: m.get("type") == "result", "result")["subtype"] == "success"
            wires.append(wire)
    assert len(set(asked)) == 5
    _drop(wires)
    for i, (folder, n) in enumerate(zip(folders, counts)):
        for k in range(n):
            assert (folder / f"s{i}-{k}.txt").read_text() == f"{i}{k}"
    deadline = time.monotonic() + 10
    while any(s["busy"] for s in control_request("status")["sessions"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert control_request("status")["pending"] == []
    fake.assert_done()
    assert host.poll() is None


def test_a_host_killed_with_a_question_pending_is_replaced_and_the_session_resumes(engine_host, workdir):
    """kill -9 of the host itself: the next start replaces its stale socket, and resuming the session there gives the
    unanswered call its synthetic result (the transcript the model sees next is valid)."""
    host_env, fake = engine_host
    fake.script([reply(tool_use("Write", {"file_path": str(workdir / "lost.txt"), "content": "x"}, id="toolu_lost"))])
    first = _start(host_env)
    wire = Wire(host_env.socket)
    info = wire.response_to(wire.request({"subtype": "desktop_agent_open", "folder": str(workdir),
                                          "settings": {"trusted": True}}))
    wire.send({"type": "user", "message": {"role": "user", "content": "write lost.txt"}})
    wire.question()
    first.kill()
    first.wait()
    wire.close()
    assert host_env.socket.exists()  # stale
    second = _start(host_env)
    assert control_request("status")["pid"] == second.pid
    fake.script([reply(text("Resumed."))])
    wire = Wire(host_env.socket)
    resumed = wire.response_to(wire.request({"subtype": "desktop_agent_open", "folder": str(workdir),
                                             "settings": {"trusted": True, "resume": info["session_id"]}}))
    assert resumed["session_id"] == info["session_id"]
    wire.send({"type": "user", "message": {"role": "user", "content": "go on"}})
    assert wire.until(lambda m: m.get("type") == "result", "result")["subtype"] == "success"
    sent = fake.requests[-1].messages  # what the model saw: a valid conversation (fake.assert_done checks the API's
    # rules: every tool_use answered in the next message); the call that was never answered never ran
    uses = [b["id"] for m in sent if m["role"] == "assistant" for b in m["content"] if b.get("type") == "tool_use"]
    results = [b["tool_use_id"] for m in sent if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    assert uses == results
    assert sent[0]["content"][0]["text"] == "write lost.txt" and sent[-1]["content"][0]["text"] == "go on"
    assert not (workdir / "lost.txt").exists()
    fake.assert_done()
    wire.close()
