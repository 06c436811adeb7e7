"""A hostile client of the background host: another program of the same user on the host's Unix socket, speaking raw
bytes to a real ``desktop-agent host --foreground`` (the fake Messages API scripts its model). Each test is one
attack; the host refuses it (an error ``control_response`` where the protocol has one, the connection closed where
the stream can no longer be trusted), acts on nothing it did not ask, and keeps serving its other clients:

- ``desktop_agent_client_active`` with a non-bool ``active`` is refused, never coerced;
- the requests only the host sends (``can_use_tool``, ``hook_callback``, ``desktop_agent_review``,
  ``desktop_agent_confirm_pairing``, ``desktop_agent_phone_devices``) are refused when a client sends them;
- a ``control_response`` for an id the host never asked this connection does not answer another session's or
  another connection's question;
- a line nested too deep, a line over the socket's limit, invalid UTF-8, a JSON line that is not an object;
- the phone page: its state directory is the host's own (absolute, 0700), ``offer``/``revoke``/``off`` only from
  a connection that turned it on, and a pairing is confirmed only by the window that was asked;
- ``update_environment_variables`` does not reach the commands of another client's session.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from desktop_agent.host.daemon import control_request
from tests.fakes.anthropic_server import reply, text, tool_use
from tests.host.remote.phone import Phone
from tests.host.test_background_engine import Wire, _start, engine_host  # noqa: F401 - the fixture

LINE_LIMIT = 16 * 1024 * 1024  # the session socket's line limit (host.daemon)


class RawWire(Wire):
    """``Wire`` with raw bytes out, and the next ``control_response`` (success or error) for an id."""

    def raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def reply_to(self, rid: str) -> dict[str, Any]:
        msg = self.until(lambda m: m.get("type") == "control_response" and m["response"].get("request_id") == rid,
                         f"control_response {rid}")
        return msg["response"]

    def error_to(self, rid: str) -> str:
        body = self.reply_to(rid)
        assert body["subtype"] == "error", body
        assert body.get("error"), body
        return str(body["error"])

    def closed_by_host(self, timeout: float = 10.0) -> bool:
        """True when the host closed this connection (EOF), reading past whatever it wrote first."""
        self.sock.settimeout(timeout)
        try:
            while True:
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    return True
                self.buf += chunk
        except (TimeoutError, socket.timeout):
            return False
        except ConnectionResetError:
            return True


def _open(host_env: Any, folder: Path) -> tuple[RawWire, dict[str, Any]]:
    wire = RawWire(host_env.socket)
    info = wire.response_to(wire.request({"subtype": "desktop_agent_open", "folder": str(folder),
                                          "settings": {"trusted": True}}))
    return wire, info


def _pending(wire: Wire) -> list[tuple[str, str]]:
    questions = wire.response_to(wire.request({"subtype": "desktop_agent_pending"}))["questions"]
    return [(q["session_id"], q["request_id"]) for q in questions]


def _allow_and_finish(wire: Wire, question: dict[str, Any]) -> None:
    """The question's own client allows it as asked, and the turn ends."""
    wire.send({"type": "control_response", "response": {
        "subtype": "success", "request_id": question["request_id"],
        "response": {"behavior": "allow", "updatedInput": question["request"]["input"]}}})
    wire.until(lambda m: m.get("type") == "result", "the turn's result")


def _still_serving(host_env: Any, host: subprocess.Popen[bytes]) -> None:
    """The host process lives and a fresh client is answered."""
    assert host.poll() is None, host_env.log_text()[-3000:]
    other = RawWire(host_env.socket)
    try:
        assert "sessions" in other.response_to(other.request({"subtype": "desktop_agent_sessions"}))
    finally:
        other.close()


def test_client_active_with_a_value_that_is_not_a_bool_is_refused(engine_host, tmp_path: Path) -> None:
    host_env, fake = engine_host
    host = _start(host_env)
    folder = tmp_path / "w"
    folder.mkdir()
    wire, _info = _open(host_env, folder)
    for value in ("false", "true", 0, 1, None, [], {}):
        rid = wire.request({"subtype": "desktop_agent_client_active", "active": value})
        error = wire.error_to(rid)
        assert "bool" in error.lower(), (value, error)
    wire.send({"type": "control_request", "request_id": "missing",
               "request": {"subtype": "desktop_agent_client_active"}})
    wire.error_to("missing")
    for value in (False, True):  # the real thing still works on the same connection
        wire.response_to(wire.request({"subtype": "desktop_agent_client_active", "active": value}))
    _still_serving(host_env, host)
    wire.close()


HOST_TO_CLIENT = [
    {"subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": "printf x > x.txt"}, "tool_use_id": "t"},
    {"subtype": "hook_callback", "callback_id": "cb", "input": {}},
    {"subtype": "desktop_agent_review", "session_id": "s", "request_id": "r"},
    {"subtype": "desktop_agent_confirm_pairing", "device_name": "Mallory", "verification": "123456"},
    {"subtype": "desktop_agent_phone_devices", "devices": [{"id": "x", "name": "Mallory"}]},
]


def test_requests_only_the_host_sends_are_refused_from_a_client(engine_host, tmp_path: Path) -> None:
    host_env, fake = engine_host
    fake.script([reply(tool_use("Bash", {"command": "printf ok > ok.txt"}, id="toolu_h1")), reply(text("Ran it."))])
    host = _start(host_env)
    folder = tmp_path / "w"
    folder.mkdir()
    wire, info = _open(host_env, folder)
    wire.send({"type": "user", "message": {"role": "user", "content": "run it"}})
    question = wire.question()
    loose = RawWire(host_env.socket)  # attached to no session
    for w in (wire, loose):
        for request in HOST_TO_CLIENT:
            # the same id as the pending question: it must neither answer nor replace it
            w.send({"type": "control_request", "request_id": question["request_id"], "request": request})
            error = w.error_to(question["request_id"])
            assert request["subtype"] in error and "host sends" in error, error
        rid = w.request({"subtype": "desktop_agent_review", "session_id": info["session_id"],
                         "request_id": question["request_id"]})
        assert "host sends" in w.error_to(rid)
    assert not (folder / "x.txt").exists()
    assert _pending(loose) == [(info["session_id"], question["request_id"])]  # the real question, untouched
    _allow_and_finish(wire, question)
    assert (folder / "ok.txt").read_text() == "ok"
    _still_serving(host_env, host)
    wire.close()
    loose.close()
    fake.assert_done()


def test_an_answer_for_a_question_this_connection_was_not_asked_lands_nowhere(engine_host, tmp_path: Path) -> None:
    host_env, fake = engine_host
    fake.script([reply(tool_use("Bash", {"command": "printf a > a.txt"}, id="toolu_a")),
                 reply(tool_use("Bash", {"command": "printf b > b.txt"}, id="toolu_b")),
                 reply(text("done")), reply(text("done"))])
    host = _start(host_env)
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    a_dir.mkdir()
    b_dir.mkdir()
    wa, a_info = _open(host_env, a_dir)
    wa.send({"type": "user", "message": {"role": "user", "content": "a"}})
    qa = wa.question()
    wb, b_info = _open(host_env, b_dir)
    wb.send({"type": "user", "message": {"role": "user", "content": "b"}})
    qb = wb.question()
    loose = RawWire(host_env.socket)

    def allow(w: RawWire, q: dict[str, Any], rid: str | None = None) -> str:
        rid = rid or q["request_id"]
        w.send({"type": "control_response", "response": {
            "subtype": "success", "request_id": rid,
            "response": {"behavior": "allow", "updatedInput": q["request"]["input"]}}})
        return rid

    # session B's client answers session A's question; an unattached client answers both; and ids never asked
    assert "No pending permission request" in wb.error_to(allow(wb, qa))
    assert loose.error_to(allow(loose, qa))
    assert loose.error_to(allow(loose, qb))
    assert wa.error_to(allow(wa, qa, "never-asked"))
    loose.send({"type": "control_response", "response": {"subtype": "error", "request_id": qb["request_id"],
                                                         "error": "deny it for them"}})
    assert loose.error_to(qb["request_id"])
    assert sorted(_pending(loose)) == sorted([(a_info["session_id"], qa["request_id"]),
                                              (b_info["session_id"], qb["request_id"])])
    assert not (a_dir / "a.txt").exists() and not (b_dir / "a.txt").exists() and not (b_dir / "b.txt").exists()

    allow(wa, qa)  # each session's own client answers its own question
    wa.until(lambda m: m.get("type") == "result", "session A's result")
    allow(wb, qb)
    wb.until(lambda m: m.get("type") == "result", "session B's result")
    assert (a_dir / "a.txt").read_text() == "a" and (b_dir / "b.txt").read_text() == "b"
    assert not (b_dir / "a.txt").exists() and not (a_dir / "b.txt").exists()
    _still_serving(host_env, host)
    for w in (wa, wb, loose):
        w.close()
    fake.assert_done()


def test_malformed_lines_get_an_error_and_the_host_serves_on(engine_host, tmp_path: Path) -> None:
    host_env, fake = engine_host
    fake.script([reply(tool_use("Bash", {"command": "printf ok > ok.txt"}, id="toolu_m1")), reply(text("Ran it."))])
    host = _start(host_env)
    folder = tmp_path / "w"
    folder.mkdir()
    good, info = _open(host_env, folder)  # another client, with a question pending through it all
    good.send({"type": "user", "message": {"role": "user", "content": "run it"}})
    question = good.question()

    bad = RawWire(host_env.socket)
    deep = {"type": "control_request", "request_id": "deep", "request": {"subtype": "desktop_agent_sessions"}}
    lines: list[tuple[bytes, str]] = [
        (b"[" * 10_000 + b"\n", ""),
        (b'{"type":"control_request","request_id":"deep","request":{"subtype":"desktop_agent_record","entry":'
         + b'{"a":' * 10_000 + b"1" + b"}" * 10_000 + b"}}\n", ""),
        (json.dumps(deep).encode().replace(b'"desktop_agent_sessions"', b'"desktop_agent_sessions\xff\xfe"')
         + b"\n", "deep"),
        (b'{"type":"control_request","request_id":"utf8","request":{"subtype":"desktop_agent_sessions",'
         b'"x":"\xc3\x28"}}\n', "utf8"),
        (b"[1, 2, 3]\n", ""),
        (b'"a string"\n', ""),
        (b"42\n", ""),
        (b"null\n", ""),
        (b"not json at all\n", ""),
        (b"[" + b"1," * 2_000_000 + b"1]\n", ""),  # several MB, under the limit, not an object
    ]
    for data, rid in lines:
        bad.raw(data)
        error = bad.error_to(rid)
        assert error and len(error) < 500, error  # a sentence, not the line echoed back
    assert not list((folder).glob("*.jsonl"))
    # the connection still speaks the protocol after each of those
    assert "sessions" in bad.response_to(bad.request({"subtype": "desktop_agent_sessions"}))

    # a line over the socket's limit: an error, then the connection is closed (the rest of it is never a line)
    tail = json.dumps({"type": "control_request", "request_id": "smuggled",
                       "request": {"subtype": "desktop_agent_end", "reason": "other"}}).encode()
    huge = RawWire(host_env.socket)
    try:
        huge.raw(b"x" * (LINE_LIMIT + 1024) + b" " + tail + b"\n")
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert huge.closed_by_host()
    assert b'"error"' in huge.buf and b"smuggled" not in huge.buf, huge.buf[:500]
    huge.close()

    assert _pending(bad) == [(info["session_id"], question["request_id"])]
    _allow_and_finish(good, question)
    assert (folder / "ok.txt").read_text() == "ok"
    _still_serving(host_env, host)
    bad.close()
    good.close()
    fake.assert_done()


def _phone_dir(host_env: Any) -> Path:
    return Path(host_env.env["DESKTOP_AGENT_STATE_DIR"]) / "remote"


def test_the_phone_page_keeps_its_state_where_the_host_says(engine_host, tmp_path: Path) -> None:
    host_env, fake = engine_host
    host = _start(host_env)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    os.chmod(elsewhere, 0o755)
    wire = RawWire(host_env.socket)
    for bad in ("relative/remote", str(elsewhere), str(elsewhere / "remote"), str(Path.home()),
                str(_phone_dir(host_env)) + "/../../elsewhere"):
        error = wire.error_to(wire.request({"subtype": "desktop_agent_phone", "action": "on", "state_dir": bad}))
        assert "state" in error.lower(), error
    assert list(elsewhere.iterdir()) == [] and stat.S_IMODE(elsewhere.stat().st_mode) == 0o755
    assert not _phone_dir(host_env).exists()
    _phone_dir(host_env).mkdir(parents=True, mode=0o755)
    os.chmod(_phone_dir(host_env), 0o755)
    on = wire.response_to(wire.request({"subtype": "desktop_agent_phone", "action": "on",
                                        "state_dir": str(_phone_dir(host_env))}))
    assert on["port"] and on["fingerprint"]
    assert stat.S_IMODE(_phone_dir(host_env).stat().st_mode) == 0o700
    assert (_phone_dir(host_env) / "cert.pem").exists()
    other = RawWire(host_env.socket)  # without a state_dir: the same fixed place, the same page
    again = other.response_to(other.request({"subtype": "desktop_agent_phone", "action": "on"}))
    assert (again["port"], again["fingerprint"]) == (on["port"], on["fingerprint"])
    wire.response_to(wire.request({"subtype": "desktop_agent_phone", "action": "off"}))
    assert list(elsewhere.iterdir()) == []
    _still_serving(host_env, host)
    wire.close()
    other.close()


def test_only_the_window_that_turned_the_phone_on_offers_and_only_the_asked_one_confirms(
        engine_host, tmp_path: Path) -> None:
    host_env, fake = engine_host
    host = _start(host_env)
    window = RawWire(host_env.socket)
    on = window.response_to(window.request({"subtype": "desktop_agent_phone", "action": "on"}))
    stranger = RawWire(host_env.socket)
    for request in ({"action": "offer", "code": "mallory-code-0123456789-0123456789-abcdef"}, {"action": "revoke", "device_id": "x"},
                    {"action": "off"}):
        error = stranger.error_to(stranger.request({"subtype": "desktop_agent_phone", **request}))
        assert "turned the phone page on" in error, error
    code = "window-code-abcdefghijklmnop-0123456789-xyz"
    window.response_to(window.request({"subtype": "desktop_agent_phone", "action": "offer", "code": code}))
    where = SimpleNamespace(host=on["host"], port=on["port"], ident=SimpleNamespace(cert_pem=on["cert_pem"].encode()))

    async def main() -> None:
        async with Phone(where, name="Somebody") as phone:  # type: ignore[arg-type]
            status, data = (await phone.begin_pairing("mallory-code-0123456789-0123456789-abcdef"))[:2]
            assert status != 200, data  # the stranger's offer never became one
            status, data, _keys = await phone.begin_pairing(code)
            assert status == 200, data
            ask = await asyncio.to_thread(
                window.until, lambda m: m.get("type") == "control_request"
                and m["request"].get("subtype") == "desktop_agent_confirm_pairing", "the pairing to confirm")
            rid = ask["request_id"]
            # the stranger says yes to the window's question: refused, and the pairing still waits for the window
            stranger.send({"type": "control_response", "response": {"subtype": "success", "request_id": rid,
                                                                    "response": {"accepted": True}}})
            assert await asyncio.to_thread(stranger.error_to, rid)
            waiting = asyncio.ensure_future(phone.post("/api/pair/wait", {"pairing": data["pairing"]}))
            await asyncio.sleep(0.5)
            assert not waiting.done() or waiting.result()[1].get("status") == "pending"
            window.send({"type": "control_response", "response": {"subtype": "success", "request_id": rid,
                                                                  "response": {"accepted": False}}})
            while True:
                _status, done = await waiting
                if done.get("status") != "pending":
                    break
                waiting = asyncio.ensure_future(phone.post("/api/pair/wait", {"pairing": data["pairing"]}))
            assert done == {"status": "refused"}, done

    asyncio.run(main())
    devices = window.response_to(window.request({"subtype": "desktop_agent_phone", "action": "on"}))["devices"]
    assert devices == []
    window.response_to(window.request({"subtype": "desktop_agent_phone", "action": "off"}))
    assert control_request("status") is not None
    _still_serving(host_env, host)
    window.close()
    stranger.close()


def test_a_client_cannot_change_the_environment_of_the_other_sessions(engine_host, tmp_path: Path) -> None:
    host_env, fake = engine_host
    fake.script([reply(tool_use("Bash", {"command": 'printf "[$HOSTILE_PROBE]" > env.txt'}, id="toolu_e1")),
                 reply(text("Ran it."))])
    host = _start(host_env)
    hostile = RawWire(host_env.socket)
    hostile.send({"type": "update_environment_variables", "variables": {"HOSTILE_PROBE": "set-by-another-client"}})
    assert "environment" in hostile.error_to("")
    folder = tmp_path / "w"
    folder.mkdir()
    wire, _info = _open(host_env, folder)  # another client's session runs a command in the host's environment
    wire.send({"type": "user", "message": {"role": "user", "content": "run it"}})
    question = wire.question()
    _allow_and_finish(wire, question)
    assert (folder / "env.txt").read_text() == "[]"
    _still_serving(host_env, host)
    wire.close()
    hostile.close()
    fake.assert_done()
