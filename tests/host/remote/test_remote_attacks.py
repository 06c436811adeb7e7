"""The phone page's boundaries, each attacked over real HTTPS against a real ``RemoteServer`` on loopback, with a
real ``Inbox`` holding real questions (an Edit run through the engine): replay, swapped input, used/expired
pairing codes, revoked devices, CSRF, DNS rebinding, plain HTTP, a second device, guessing, secrets in logs."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import ssl
import stat
import time
from pathlib import Path
from typing import Any, AsyncIterator

import aiohttp
import pytest

from desktop_agent.host.inbox import Inbox
from desktop_agent.host.remote.devices import PairingOffers
from desktop_agent.host.remote.server import PairingPrompt, RemoteServer
from desktop_agent.host.remote.view import question_view
from tests.host.questions import FIVE_HUNKS_OLD, bash_request, five_hunk_edit, start_edit, start_tool
from tests.host.remote.phone import Phone, fragment, wait_for, yes


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, **kw: Any) -> AsyncIterator[tuple[Inbox, RemoteServer, list[PairingPrompt]]]:
    inbox = Inbox()
    prompts: list[PairingPrompt] = []

    async def confirm(prompt: PairingPrompt) -> bool:
        prompts.append(prompt)
        return True

    server = RemoteServer(inbox, tmp_path / "state", host="127.0.0.1", confirm=kw.pop("confirm", confirm), **kw)
    await server.start()
    try:
        yield inbox, server, prompts
    finally:
        await server.stop()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_pairing_gives_each_device_its_own_key_confirmed_with_the_same_code(tmp_path: Path) -> None:
    async def main() -> None:
        async with serving(tmp_path) as (inbox, server, prompts):
            async with Phone(server, name="Anna's phone") as a, Phone(server, name="Tablet") as b:
                await a.pair(server.pairing_url())
                await b.pair(server.pairing_url())
                assert [p.device_name for p in prompts] == ["Anna's phone", "Tablet"]
                assert prompts[0].verification == a.verification and prompts[1].verification == b.verification
                assert a.key != b.key and a.device_id != b.device_id
                assert {d["name"] for d in server.list_devices()} == {"Anna's phone", "Tablet"}
                store = tmp_path / "state" / "devices.json"
                assert stat.S_IMODE(store.stat().st_mode) == 0o600
                assert stat.S_IMODE((tmp_path / "state" / "key.pem").stat().st_mode) == 0o600
                assert "key" not in server.list_devices()[0]

    run(main())


def test_a_device_the_desktop_refuses_is_not_paired(tmp_path: Path) -> None:
    async def no(prompt: PairingPrompt) -> bool:
        return False

    async def main() -> None:
        async with serving(tmp_path, confirm=no) as (inbox, server, prompts):
            async with Phone(server) as phone:
                code, _ = fragment(server.pairing_url())
                status, data, _ = await phone.begin_pairing(code)
                assert status == 200
                while (w := await phone.post("/api/pair/wait", {"pairing": data["pairing"]}))[1]["status"] == "pending":
                    pass
                assert w[1]["status"] == "refused" and server.list_devices() == []

    run(main())


def test_used_and_expired_pairing_codes_are_refused(tmp_path: Path) -> None:
    now = [1000.0]
    offers = PairingOffers(clock=lambda: now[0])

    async def main() -> None:
        async with serving(tmp_path, offers=offers) as (inbox, server, prompts):
            async with Phone(server) as phone, Phone(server) as thief:
                url = server.pairing_url()
                await phone.pair(url)
                code, _ = fragment(url)
                status, data, _ = await thief.begin_pairing(code)  # the same code again
                assert status == 403 and "not valid" in data["error"]
                code, _ = fragment(server.pairing_url())
                now[0] += 301  # five minutes and a second
                status, data, _ = await thief.begin_pairing(code)
                assert status == 403
                assert len(server.list_devices()) == 1 and len(prompts) == 1

    run(main())


def test_guessing_the_code_is_rate_limited_and_burns_the_offer(tmp_path: Path) -> None:
    async def main() -> None:
        async with serving(tmp_path) as (inbox, server, prompts):
            async with Phone(server) as attacker:
                code, _ = fragment(server.pairing_url())
                statuses = [(await attacker.begin_pairing(f"guess{i:04d}{'x' * 20}"))[0] for i in range(8)]
                assert statuses[:4] == [403] * 4 and set(statuses[4:]) == {429}
                status, _, _ = await attacker.begin_pairing(code)  # even the right code now: burned
                assert status == 429 and prompts == [] and server.list_devices() == []

    run(main())


async def paired(server: RemoteServer, name: str = "phone") -> Phone:
    phone = Phone(server, name=name)
    await phone.__aenter__()
    await phone.pair(server.pairing_url())
    return phone


def test_replay_swap_stale_and_forged_answers_are_refused(tmp_path: Path) -> None:
    async def main() -> None:
        async with serving(tmp_path) as (inbox, server, prompts):
            phone = await paired(server)
            try:
                q1 = inbox.ask("sess-1", bash_request("ls"), title="a")
                q2 = inbox.ask("sess-1", bash_request("rm -rf ~"), title="a")
                v1, v2 = question_view(q1), question_view(q2)
                # a stale answer (two minutes old) and one from the future
                assert (await phone.answer(v1, "deny", ts=time.time() - 120))[1]["outcome"] == "stale"
                assert (await phone.answer(v1, "deny", ts=time.time() + 120))[1]["outcome"] == "stale"
                # swapped input: q2's request id with q1's hash (and the MAC right for that)
                swapped = dict(v2, input_sha256=v1["input_sha256"])
                status, data = await phone.answer(swapped, "allow")
                assert status == 409 and data["outcome"] == "mismatch" and not q2.future.done()
                # a MAC that does not match the fields (the decision changed in transit)
                body = phone.answer_body(v2, "deny")
                body["behavior"] = "allow"
                assert (await phone.post("/api/answer", body))[0] == 401
                # a real answer, then its exact replay
                body = phone.answer_body(v1, "deny", feedback="not now")
                assert (await phone.post("/api/answer", body)) == (200, {"outcome": "ok"})
                reply = await inbox.wait(q1)
                assert reply.behavior == "deny" and reply.feedback == "not now"
                status, data = await phone.post("/api/answer", body)
                assert status == 409 and data["outcome"] == "replay"
                # the same nonce reused for another question
                again = phone.answer_body(v2, "allow", nonce=body["nonce"])
                assert (await phone.post("/api/answer", again))[1]["outcome"] == "replay"
                assert not q2.future.done()
                # "always" does not exist remotely: an answer carries no permission update at all
                status, data = await phone.answer(v2, "allow_always")
                assert status == 400 and not q2.future.done()
            finally:
                await phone.__aexit__()

    run(main())


def test_a_second_device_answering_after_the_first_is_refused(tmp_path: Path) -> None:
    async def main() -> None:
        async with serving(tmp_path) as (inbox, server, prompts):
            first, second = await paired(server, "first"), await paired(server, "second")
            try:
                heard: list[str] = []
                inbox.subscribe(lambda e: heard.append(f"{e.kind}:{e.source}"))
                q = inbox.ask("sess-1", bash_request("make deploy"))
                view = question_view(q)
                ws = await second.events()
                assert await first.answer(view, "allow") == (200, {"outcome": "ok"})
                status, data = await second.answer(view, "deny")
                assert status == 409 and data["outcome"] == "answered"
                assert (await inbox.wait(q)).behavior == "allow"
                assert heard == ["asked:", f"resolved:phone:{first.device_id}"]
                gone = await ws.receive_json(timeout=2)  # the second phone saw it vanish
                assert gone["type"] == "gone" and gone["request_id"] == q.request_id and gone["by"] == "phone"
                await ws.close()
            finally:
                await first.__aexit__()
                await second.__aexit__()

    run(main())


def test_revoke_is_instant_and_closes_open_connections(tmp_path: Path) -> None:
    async def main() -> None:
        async with serving(tmp_path) as (inbox, server, prompts):
            phone = await paired(server)
            try:
                ws = await phone.events()
                q = inbox.ask("sess-1", bash_request("ls"))
                assert (await ws.receive_json(timeout=2))["type"] == "asked"
                assert await server.revoke(phone.device_id)
                msg = await ws.receive(timeout=2)
                assert msg.type == aiohttp.WSMsgType.CLOSE and msg.data == 4001 and msg.extra == "revoked"
                status, _ = await phone.answer(question_view(q), "allow")
                assert status == 401 and not q.future.done()
                ws2 = await phone.session.ws_connect(phone.origin + "/api/events", headers=phone.headers())
                await ws2.receive_json(timeout=2)
                await ws2.send_json({"device": phone.device_id, "nonce": "n" * 32, "mac": "0" * 64})
                closed = await ws2.receive(timeout=2)
                assert closed.type == aiohttp.WSMsgType.CLOSE and closed.data == 4001
                assert server.list_devices() == []
            finally:
                await phone.__aexit__()

    run(main())


def test_cross_origin_requests_are_refused(tmp_path: Path) -> None:
    async def main() -> None:
        async with serving(tmp_path) as (inbox, server, prompts):
            phone = await paired(server)
            try:
                q = inbox.ask("sess-1", bash_request("ls"))
                body = phone.answer_body(question_view(q), "allow")
                for headers in ({"Origin": "https://evil.example"}, {},
                                {"Origin": f"http://127.0.0.1:{server.port}"},
                                {"Origin": phone.origin, "Sec-Fetch-Site": "cross-site"}):
                    status, _ = await phone.post("/api/answer", body, headers=headers)
                    assert status == 403, headers
                # a form post (the only cross-site POST without a preflight) is not JSON
                async with phone.session.post(phone.origin + "/api/answer", data={"x": "1"},
                                              headers={"Origin": phone.origin}) as r:
                    assert r.status == 415
                with pytest.raises(aiohttp.WSServerHandshakeError):
                    await phone.session.ws_connect(phone.origin + "/api/events",
                                                   headers={"Origin": "https://evil.example"})
                assert not q.future.done()
                # the same body from our own origin is fine: the refusals were about the origin
                assert (await phone.post("/api/answer", body))[0] == 200
            finally:
                await phone.__aexit__()

    run(main())


def test_a_foreign_host_is_refused_dns_rebinding(tmp_path: Path) -> None:
    async def main() -> None:
        async with serving(tmp_path) as (inbox, server, prompts):
            async with Phone(server) as phone:
                for host in (f"evil.example:{server.port}", "127.0.0.1", f"127.0.0.1:{server.port + 1}"):
                    async with phone.session.get(phone.origin + "/", headers={"Host": host}) as r:
                        assert r.status == 421, host
                    async with phone.session.post(phone.origin + "/api/pair", json={},
                                                  headers={"Host": host, "Origin": f"https://{host}"}) as r:
                        assert r.status == 421
                async with phone.session.get(phone.origin + "/") as r:
                    assert r.status == 200
                    csp = r.headers["Content-Security-Policy"]
                    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "default-src 'none'" in csp
                    assert r.headers["X-Frame-Options"] == "DENY"
                    page = await r.text()
                    assert "<script>" not in page and "http://" not in page.replace("http://www.w3.org", "")

    run(main())


def test_plain_http_is_refused_not_redirected(tmp_path: Path) -> None:
    async def main() -> None:
        async with serving(tmp_path) as (inbox, server, prompts):
            def plain() -> bytes:
                with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
                    s.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
                    chunks = b""
                    try:
                        while chunk := s.recv(4096):
                            chunks += chunk
                    except (ConnectionResetError, socket.timeout):
                        pass
                    return chunks

            answer = await asyncio.to_thread(plain)
            assert b"HTTP/1.1 3" not in answer and b"Location" not in answer
            assert answer == b"" or answer.startswith(b"HTTP/1.1 400") or answer[:1] == b"\x15"  # closed / TLS alert
            async with aiohttp.ClientSession() as s:
                with pytest.raises(aiohttp.ClientError):
                    await s.get(f"http://127.0.0.1:{server.port}/")

    run(main())


def test_keys_codes_and_macs_never_reach_the_logs(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)

    async def main() -> list[str]:
        async with serving(tmp_path) as (inbox, server, prompts):
            url = server.pairing_url()
            code, _ = fragment(url)
            phone = Phone(server)
            await phone.__aenter__()
            try:
                await phone.pair(url)
                q = inbox.ask("sess-1", bash_request("ls"))
                body = phone.answer_body(question_view(q), "allow")
                await phone.post("/api/answer", body)
                await phone.post("/api/answer", body)  # replay: logged as refused
                await phone.begin_pairing("wrong-code-" + "y" * 20)
                ws = await phone.events()
                await ws.close()
                await server.revoke(phone.device_id)
                return [code, phone.key.hex(), phone.key.hex()[:16], body["mac"], body["nonce"],
                        __import__("base64").b64encode(phone.key).decode(),
                        server.ident.key_pem.decode().splitlines()[1]]
            finally:
                await phone.__aexit__()

    secrets_ = run(main())
    text = "\n".join(r.getMessage() + " " + str(r.args) for r in caplog.records)
    assert "refused" in text and "paired" in text  # the logs say what happened…
    for secret in secrets_:
        assert secret not in text  # …and never with what proves it


def test_a_withdrawn_question_vanishes_and_an_answer_to_it_is_refused(tmp_path: Path) -> None:
    async def main() -> None:
        async with serving(tmp_path) as (inbox, server, prompts):
            phone = await paired(server)
            try:
                ws = await phone.events()
                q = inbox.ask("sess-1", bash_request("sleep 100"))
                asked = await ws.receive_json(timeout=1)
                assert asked["question"]["command"] == "sleep 100"
                inbox.withdraw(*q.key)
                gone = await ws.receive_json(timeout=1)
                assert gone == {"type": "gone", "session_id": "sess-1", "request_id": q.request_id,
                                "how": "withdrawn", "by": ""}
                status, data = await phone.answer(asked["question"], "allow")
                assert status == 409 and data["outcome"] == "withdrawn"
                await ws.close()
            finally:
                await phone.__aexit__()

    run(main())


def test_per_hunk_answer_writes_exactly_the_accepted_hunks(tmp_path: Path) -> None:
    """Over the signed API (the browser test does it by tapping): reject hunk 2 of 5, allow the rest — the Edit
    tool writes exactly that and tells the model which lines it left."""
    work = tmp_path / "work"
    work.mkdir()
    target = work / "numbers.txt"
    target.write_text(FIVE_HUNKS_OLD)
    old, new = five_hunk_edit()

    async def main() -> None:
        async with serving(tmp_path) as (inbox, server, prompts):
            phone = await paired(server)
            try:
                task, q = await start_edit(work, inbox, target, old, new)
                view = question_view(q)
                assert view["per_hunk"] and len(view["hunks"]) == 5
                assert await phone.answer(view, "allow", accepted="10111") == (200, {"outcome": "ok"})
                reply = await inbox.wait(q)
                assert reply.rejected_hunks == [(15, 21)] and reply.total_hunks == 5
                out = await asyncio.wait_for(task, 10)
                assert not out.is_error, out.block
                expected = FIVE_HUNKS_OLD
                for n in (6, 30, 42, 54):
                    expected = expected.replace(f"line {n}\n", f"LINE {n} changed\n")
                assert target.read_text() == expected
                assert "15" in str(out.block["content"])
            finally:
                await phone.__aexit__()

    run(main())


def test_per_hunk_answer_to_a_write_and_refused_decisions(tmp_path: Path) -> None:
    """A Write over an existing file: the same per-hunk rule as the dialog; decisions that do not fit the patch
    (wrong count, not 0/1, all rejected, hunks on a deny) are refused and leave the question pending."""
    work = tmp_path / "work"
    work.mkdir()
    target = work / "numbers.txt"
    target.write_text(FIVE_HUNKS_OLD)
    new_text = FIVE_HUNKS_OLD.replace("line 6\n", "six\n").replace("line 54\n", "fifty-four\n")

    async def main() -> None:
        async with serving(tmp_path) as (inbox, server, prompts):
            phone = await paired(server)
            try:
                task, q = await start_tool(work, inbox, target, "Write",
                                           {"file_path": str(target), "content": new_text})
                view = question_view(q)
                assert view["per_hunk"] and len(view["hunks"]) == 2
                for behavior, accepted in (("allow", "1"), ("allow", "111"), ("allow", "1x"), ("allow", "00"),
                                           ("deny", "10")):
                    status, _ = await phone.answer(view, behavior, accepted=accepted)
                    assert status == 400, (behavior, accepted)
                assert not q.future.done()
                assert await phone.answer(view, "allow", accepted="01") == (200, {"outcome": "ok"})
                out = await asyncio.wait_for(task, 10)
                assert not out.is_error, out.block
                assert target.read_text() == FIVE_HUNKS_OLD.replace("line 54\n", "fifty-four\n")
                assert q.future.result().rejected_hunks == [(3, 9)]
            finally:
                await phone.__aexit__()

    run(main())


def test_invisible_characters_are_shown_on_the_page() -> None:
    """Bidi overrides and zero-width characters in a command or a patch appear as ⟨U+…⟩ on the page."""
    from desktop_agent.host.inbox import PendingQuestion

    q = PendingQuestion(session_id="s", request=bash_request("echo ok\u202e ;hs.lave\u200b"))
    view = question_view(q)
    assert view["command"] == "echo ok\u27e8U+202E\u27e9 ;hs.lave\u27e8U+200B\u27e9"
    assert "\u202e" not in view["input"] and "U+202E" in view["input"]
