"""One dialog at a time (issue 21 item 2): the window's ``PromptQueue`` against the real engine, the real window and
the fake Anthropic server. Two Reads outside the folder in one assistant message run concurrently and both ask:
exactly one dialog is visible and says "1 more waiting"; answering it shows the other; each tool_result the model
gets next is the answer given to its own call. Stop with both waiting denies both and leaves no dialog. Both with the
engine in this process and in an executor process (its questions cross the stdio protocol). A question the engine
withdraws leaves the queue (unit tests on the queue itself, with real dialogs).
"""

from __future__ import annotations

import asyncio

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from desktop_agent.core.permission import PermissionReply, PermissionRequest
from desktop_agent.ui.dialogs.permission import PermissionDialog
from desktop_agent.ui.window.questions import PromptQueue
from tests.fakes.anthropic_server import reply, text, tool_use
from tests.ui.flow import open_and_send, result_text, tool_results, wait_dialog, wait_for
from desktop_agent.protocol.control import HistoryRequest

EXECUTORS = ["inprocess", "process"]


@pytest.fixture
def fake(fake, monkeypatch):
    """The conftest's fake API, also reachable by an executor child through its environment."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    return fake


def _two_reads(outside):
    a, b = outside / "a.txt", outside / "b.txt"
    a.write_text("alpha secret\n")
    b.write_text("beta secret\n")
    return a, b, reply(text("Reading both."), tool_use("Read", {"file_path": str(a)}, id="toolu_a"),
                       tool_use("Read", {"file_path": str(b)}, id="toolu_b"))


def _visible_permission_dialogs():
    return [w for w in QApplication.topLevelWidgets() if isinstance(w, PermissionDialog) and w.isVisible()]


@pytest.mark.parametrize("executor", EXECUTORS)
def test_two_concurrent_asks_show_one_dialog_then_the_next(qtbot, qloop, fake, make_window, workdir, tmp_path,
                                                           executor):
    outside = tmp_path / "outside"
    outside.mkdir()
    a, b, both = _two_reads(outside)
    fake.script([both, reply(text("Read one, the other was denied."))])
    win = make_window(executor)
    opened = []
    win.controller.dialog_opened.connect(opened.append)

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Read the two files")
        first = await wait_dialog(win, 20)
        await wait_for(lambda: len(win.controller.questions) == 2, what="the second question queued")
        await asyncio.sleep(0.2)  # the second ask stays queued: still one dialog
        assert _visible_permission_dialogs() == [first]
        assert first.waiting_label.isVisible() and first.waiting_label.text() == "1 more waiting"
        # the two Reads run concurrently: either may ask first
        assert first.request.tool_use_id in ("toolu_a", "toolu_b")
        sid = win.controller.session.session_id
        assert [k[0] for k in win.controller.questions.keys()] == [sid, sid]
        assert win.controller.status == "waiting"
        qtbot.mouseClick(first.allow_button, Qt.MouseButton.LeftButton)
        second = await wait_for(lambda: win.controller.current_dialog if win.controller.current_dialog is not None
                                and win.controller.current_dialog is not first
                                and win.controller.current_dialog.isVisible() else None, what="second dialog")
        assert not first.isVisible() and _visible_permission_dialogs() == [second]
        assert {first.request.tool_use_id, second.request.tool_use_id} == {"toolu_a", "toolu_b"}
        assert not second.waiting_label.isVisible()  # nothing behind it
        assert not task.done()
        qtbot.keyClicks(second.feedback, "not that one")
        qtbot.mouseClick(second.deny_button, Qt.MouseButton.LeftButton)
        await asyncio.wait_for(task, 20)
        return first.request.tool_use_id, second.request.tool_use_id

    allowed, denied = qloop.run_until_complete(scenario())
    assert [d.request.tool_use_id for d in opened] == [allowed, denied]
    secrets = {"toolu_a": "alpha secret", "toolu_b": "beta secret"}
    results = {r["tool_use_id"]: r for r in tool_results(fake, 1)}
    assert set(results) == {"toolu_a", "toolu_b"}
    assert not results[allowed].get("is_error") and secrets[allowed] in result_text(results[allowed])
    assert results[denied]["is_error"] and "User denied via UI" in result_text(results[denied])
    assert "not that one" in result_text(results[denied]) and secrets[denied] not in result_text(results[denied])
    assert not _visible_permission_dialogs() and len(win.controller.questions) == 0
    assert win.controller.status == "idle" and win.controller.current_dialog is None
    fake.assert_done()


@pytest.mark.parametrize("executor", EXECUTORS)
def test_stop_with_two_waiting_denies_both_and_leaves_no_dialog(qtbot, qloop, fake, make_window, workdir, tmp_path,
                                                                executor):
    outside = tmp_path / "outside"
    outside.mkdir()
    a, b, both = _two_reads(outside)
    fake.script([both])
    win = make_window(executor)

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "Read the two files")
        first = await wait_dialog(win, 20)
        await wait_for(lambda: len(win.controller.questions) == 2, what="the second question queued")
        win.stop()  # the toolbar's Stop (the interrupt path every stop takes)
        await asyncio.wait_for(task, 15)
        await asyncio.sleep(0.1)  # a deferred "show the next" would open now
        return first

    first = qloop.run_until_complete(scenario())
    assert not first.isVisible() and not _visible_permission_dialogs()
    assert len(win.controller.questions) == 0 and win.controller.current_dialog is None
    assert win.controller.status == "idle" and not win.controller.busy
    history = qloop.run_until_complete(win.controller.session.request(HistoryRequest()))["entries"]
    results = {b["tool_use_id"]: b for e in history if e.get("type") == "user" and isinstance(e["message"]["content"],
                                                                                           list)
               for b in e["message"]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"}
    assert set(results) == {"toolu_a", "toolu_b"}  # one tool_result per tool_use: the transcript is valid
    assert all(r["is_error"] for r in results.values())
    assert not any("secret" in result_text(r) for r in results.values())
    assert win.conversation.cards["toolu_a"].state in ("denied", "cancelled")
    assert win.conversation.cards["toolu_b"].state in ("denied", "cancelled")
    assert len(fake.requests) == 1  # the stopped turn asked the model nothing more


# ----- the queue itself, with real dialogs --------------------------------------------------------------
def _request(n: int) -> PermissionRequest:
    return PermissionRequest(tool_name="Bash", tool_use_id=f"toolu_{n}", input={"command": f"echo {n}"}, cwd="/w")


def test_withdrawn_question_leaves_the_queue_and_its_dialog_closes_silently(qtbot, qloop, qapp):
    qapp.setQuitOnLastWindowClosed(False)
    queue = PromptQueue()
    made: list[PermissionDialog] = []

    def maker(n):
        def make():
            made.append(PermissionDialog(_request(n)))
            return made[-1]
        return make

    deny = PermissionReply(behavior="deny", message="User denied via UI", interrupt=True)

    async def scenario():
        asks = [asyncio.ensure_future(queue.ask(("s", f"r{n}"), maker(n), stop_value=deny)) for n in range(3)]
        await wait_for(lambda: queue.dialog is not None and queue.dialog.isVisible(), what="first dialog")
        first = queue.dialog
        assert len(made) == 1 and first.waiting_label.text() == "2 more waiting"
        asks[1].cancel()  # a waiting question withdrawn: it leaves, never shown
        with pytest.raises(asyncio.CancelledError):
            await asks[1]
        assert queue.keys() == [("s", "r0"), ("s", "r2")] and first.waiting_label.text() == "1 more waiting"
        asks[0].cancel()  # the showing one withdrawn: its dialog closes without an answer, the next shows
        with pytest.raises(asyncio.CancelledError):
            await asks[0]
        assert not first.isVisible()
        third = await wait_for(lambda: queue.dialog if queue.dialog is not None and queue.dialog.isVisible() else None,
                               what="third dialog")
        assert third.request.tool_use_id == "toolu_2" and not third.waiting_label.isVisible()
        assert len(made) == 2  # the withdrawn waiting question never had a dialog
        qtbot.keyClick(third, Qt.Key.Key_Escape)
        return await asyncio.wait_for(asks[2], 2)

    answer = qloop.run_until_complete(scenario())
    assert answer.behavior == "deny" and not answer.interrupt  # Escape is the person's deny, not Stop's
    assert len(queue) == 0 and queue.dialog is None


def test_stop_all_answers_every_question_once(qtbot, qloop, qapp):
    qapp.setQuitOnLastWindowClosed(False)
    queue = PromptQueue()
    deny = PermissionReply(behavior="deny", message="User denied via UI", interrupt=True)
    other = PermissionDialog(_request(9))

    async def scenario():
        asks = [asyncio.ensure_future(queue.ask(("s", f"r{n}"), lambda n=n: PermissionDialog(_request(n)),
                                                stop_value=deny)) for n in range(3)]
        window_question = asyncio.ensure_future(queue.ask(("s", "stop-turn"), lambda: other))  # no stop value
        await wait_for(lambda: queue.dialog is not None and queue.dialog.isVisible(), what="first dialog")
        first = queue.dialog
        queue.stop_all()
        replies = await asyncio.wait_for(asyncio.gather(*asks), 2)
        assert not first.isVisible()
        shown = await wait_for(lambda: queue.dialog if queue.dialog is not None and queue.dialog.isVisible() else None,
                               what="the window's own question")
        assert shown is other and queue.keys() == [("s", "stop-turn")]
        window_question.cancel()
        await asyncio.wait({window_question})
        return replies

    replies = qloop.run_until_complete(scenario())
    assert [r.behavior for r in replies] == ["deny"] * 3 and all(r.interrupt for r in replies)
    assert not other.isVisible() and len(queue) == 0


def test_a_dialog_that_cannot_be_built_denies_and_the_queue_goes_on(qtbot, qloop, qapp):
    qapp.setQuitOnLastWindowClosed(False)
    queue = PromptQueue()

    def broken():
        raise RuntimeError("no dialog")

    async def scenario():
        first = asyncio.ensure_future(queue.ask(("s", "r0"), lambda: PermissionDialog(_request(0))))
        bad = asyncio.ensure_future(queue.ask(("s", "r1"), broken))
        last = asyncio.ensure_future(queue.ask(("s", "r2"), lambda: PermissionDialog(_request(2))))
        dlg = await wait_for(lambda: queue.dialog, what="first dialog")
        qtbot.keyClick(dlg, Qt.Key.Key_Escape)
        await asyncio.wait_for(first, 2)
        with pytest.raises(RuntimeError):
            await asyncio.wait_for(bad, 2)  # the controller's asker turns an error into a deny (fail closed)
        dlg = await wait_for(lambda: queue.dialog if queue.dialog is not None and queue.dialog.isVisible() else None,
                             what="last dialog")
        assert dlg.request.tool_use_id == "toolu_2"
        qtbot.keyClick(dlg, Qt.Key.Key_Escape)
        return await asyncio.wait_for(last, 2)

    assert qloop.run_until_complete(scenario()).behavior == "deny"
    with pytest.raises(ValueError):
        qloop.run_until_complete(_twice(queue))


async def _twice(queue):
    make = lambda: PermissionDialog(_request(5))  # noqa: E731
    first = asyncio.ensure_future(queue.ask(("s", "dup"), make))
    await asyncio.sleep(0)
    try:
        await queue.ask(("s", "dup"), make)
    finally:
        first.cancel()
        await asyncio.wait({first})
