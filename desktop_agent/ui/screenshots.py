"""Render the main states of the app to PNGs: ``python -m desktop_agent.ui.screenshots OUTDIR``.

States: the empty window, a streaming turn, the permission dialog with a diff, the changes panel
with several changes (a real tour run through the engine), the settings dialog, the dialog with a
decision per hunk (2 of 5 rejected) and a big diff's hunk navigator, the MCP Servers view (up, failed
with its last error and banner, restarting), the provider settings (OpenAI-compatible), expanded tool cards
(fields, an exit line, an MCP tool), queued messages and 900×600 after the tour — each in the
light and the dark palette. Dialogs are composited over their window (offscreen platforms have no
window manager). Works offscreen or under Xvfb; uses a throwaway HOME so no real key or setting
shows up.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TYPE_CHECKING, Any, AsyncIterator, TypeVar

from desktop_agent.ui.screenshots_kit import isolate_home, populate_streaming, settle, until

if TYPE_CHECKING:
    from desktop_agent.client.base import Ack, HandleState
    from desktop_agent.core.events import AgentEvent
    from desktop_agent.core.permission import PermissionReply
    from desktop_agent.protocol import WireModel

W, H = 1280, 800
_T = TypeVar("_T")


def _shown(value: _T | None, what: str) -> _T:
    """``value``, which the state being shot has (a dialog, its diff view); a missing one stops the run."""
    if value is None:
        raise RuntimeError(f"screenshots: {what} is not there")
    return value


def _composite(win, dialog):
    """The window, dimmed, with the dialog centred on it under a simple title bar (no window manager
    offscreen, so the dialog's title — e.g. "Allow Edit: app.ts?" — is drawn here)."""
    from PySide6.QtCore import QRect, Qt
    from PySide6.QtGui import QColor, QFont, QPainter, QPen

    from desktop_agent.ui.highlight import is_dark

    dark = is_dark()
    base = win.grab().toImage()
    p = QPainter(base)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    p.fillRect(base.rect(), QColor(0, 0, 0, 90 if dark else 70))
    shot = dialog.grab()
    bar = 30
    x = (base.width() - shot.width()) // 2
    y = max(bar + 16, (base.height() - shot.height() + bar) // 2)
    for i in range(14, 0, -2):  # soft shadow
        p.fillRect(QRect(x - i + 6, y - bar - i + 10, shot.width() + 2 * i - 12, shot.height() + bar + 2 * i - 12),
                   QColor(0, 0, 0, 9))
    p.fillRect(QRect(x, y - bar, shot.width(), bar), QColor("#2d333b" if dark else "#e6e9ed"))
    font = QFont(dialog.font())
    font.setWeight(QFont.Weight.DemiBold)
    p.setFont(font)
    p.setPen(QColor("#e6edf3" if dark else "#1f2328"))
    p.drawText(QRect(x, y - bar, shot.width(), bar), Qt.AlignmentFlag.AlignCenter, dialog.windowTitle())
    p.drawPixmap(x, y, shot)
    p.setPen(QPen(QColor(0, 0, 0, 110), 1))
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.drawRect(x - 1, y - bar - 1, shot.width() + 1, shot.height() + bar + 1)
    p.end()
    return base


def _title_strip(img, title: str) -> None:
    """Draw the window title over the top of ``img`` (no window manager offscreen draws it): the
    picture then shows what the title bar would say. Paints on a taller copy is not needed: the
    menu bar is overlaid with a translucent strip holding the title."""
    from PySide6.QtCore import QRect, Qt
    from PySide6.QtGui import QColor, QPainter

    p = QPainter(img)
    p.fillRect(QRect(img.width() - 520, 0, 520, 22), QColor(0, 0, 0, 170))
    p.setPen(QColor("#ffffff"))
    p.drawText(QRect(img.width() - 516, 0, 512, 22), Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
               "title: " + title)
    p.end()


async def _tour(win, decisions: list[str]) -> None:
    """Play the tour's two prompts, answering each dialog from ``decisions`` (allow/deny/session)."""
    await until(lambda: win.controller.session is not None and win.prompt.toPlainText())
    for _turn in range(2):
        win.send(win.prompt.toPlainText())
        task = win.controller._task
        while not task.done():
            dlg = win.controller.current_dialog
            if dlg is not None and dlg.isVisible():
                choice = decisions.pop(0) if decisions else "allow"
                await settle(50)
                {"allow": dlg.allow_button, "deny": dlg.deny_button,
                 "session": dlg.allow_session_button}[choice].click()
            await asyncio.sleep(0.02)
        await until(lambda: bool(win.prompt.toPlainText()) or _turn == 1, 5)


async def _shoot(outdir: str, theme: str) -> list[str]:
    from PySide6.QtWidgets import QApplication

    from desktop_agent.ui.dialogs.bypass import BypassDialog
    from desktop_agent.ui.style import apply_theme
    from desktop_agent.ui.window.demo import prepare_demo_project
    from desktop_agent.ui.window.main_window import MainWindow, start_tour_window

    app = QApplication.instance()
    if not isinstance(app, QApplication):
        raise RuntimeError("screenshots: main() makes the QApplication first")
    apply_theme(app, theme)
    saved: list[str] = []

    def save(img, name: str) -> None:
        path = os.path.join(outdir, f"{name}-{theme}.png")
        img.save(path)
        saved.append(path)

    # 1. empty window
    win = MainWindow()
    win.resize(W, H)
    win.show()
    win.prompt.setFocus()
    await settle()
    save(win.grab().toImage(), "01-empty")

    # 2. streaming turn
    folder = prepare_demo_project()
    populate_streaming(win, folder)
    win.banners.update_title()
    await settle(300)
    save(win.grab().toImage(), "02-streaming")
    win.close()

    # 3. permission dialog with the diff (the real tour, stopped at its first ask)
    tour = start_tour_window(show=False)
    tour.resize(W, H)
    tour.show()
    await until(lambda: tour.controller.session is not None and tour.prompt.toPlainText())
    tour.send(tour.prompt.toPlainText())
    await until(lambda: tour.controller.current_dialog is not None and tour.controller.current_dialog.isVisible())
    await settle(300)
    asked = _shown(tour.controller.current_dialog, "the permission dialog")
    save(_composite(tour, asked), "03-permission")
    await until(asked.is_ready)  # the dialog's safety delay
    asked.allow_button.click()
    await until(lambda: not tour.controller.busy)
    await settle(100)

    # 4. changes panel with several changes (second prompt: allow, allow, deny, allow)
    decisions = ["allow", "allow", "deny", "allow"]
    await until(lambda: bool(tour.prompt.toPlainText()))
    tour.send(tour.prompt.toPlainText())
    while tour.controller.busy:
        dlg = tour.controller.current_dialog
        if dlg is not None and dlg.isVisible():
            await settle(30)
            {"allow": dlg.allow_button, "deny": dlg.deny_button}[decisions.pop(0) if decisions else "allow"].click()
        await asyncio.sleep(0.02)
    tour.prompt.clear()
    tour.diff_panel.view.verticalScrollBar().setValue(0)  # newest turn at the top
    await settle(400)
    save(tour.grab().toImage(), "04-changes")
    tour.close()

    # 6. bypass: its question over the window, then the badge in the toolbar and the title
    from desktop_agent.ui.modes import BYPASS

    bp = MainWindow()
    bp.resize(W, H)
    bp.show()
    populate_streaming(bp, folder)
    bp.toolbar.request_mode(BYPASS)
    await settle(300)
    box = bp.toolbar.bypass_box
    if not isinstance(box, BypassDialog):
        raise RuntimeError("screenshots: the Bypass question is not shown")
    save(_composite(bp, box), "08-bypass-confirm")
    box.yes_button.click()
    bp.banners.update_title()
    await settle(200)
    img = bp.grab().toImage()
    _title_strip(img, bp.windowTitle())
    save(img, "09-bypass-badge")

    # 7. a retry in progress (one card, countdown, Retry now / Cancel), at 900×600
    bp.conversation.show_retry(2, 10, 17, "Overloaded (529): the API is busy; retrying.")
    bp.resize(900, 600)
    await settle(300)
    save(bp.grab().toImage(), "10-900x600")
    bp.close()

    # 5. settings (first run, over the empty window as on a first launch)
    first = MainWindow()
    first.resize(W, H)
    first.show()
    dlg = first.show_settings(first_run=True)
    await until(dlg.key_facts_known)  # where the key comes from is looked up off the Qt thread
    await settle(200)
    save(_composite(first, dlg), "05-settings")
    dlg.close()

    # 6. a decision per hunk: a Write of five changes, two of them rejected
    from desktop_agent.core.permission import DecisionReason, PermissionRequest
    from desktop_agent.util.diff import structured_patch
    from desktop_agent.ui.dialogs.permission import PermissionDialog

    def ask(name: str, old: str, new: str) -> PermissionDialog:
        path = os.path.join(folder, name)
        req = PermissionRequest(tool_name="Write", tool_use_id=f"shot_{name}", cwd=folder, file_path=path,
                                input={"file_path": path, "content": new}, original_file=old,
                                structured_patch=structured_patch(old, new),
                                decision_reason=DecisionReason(type="mode", mode="default"))
        return PermissionDialog(req, parent=first)

    old = "".join(f"def step_{i}(ctx):\n    return ctx.run({i})\n\n" for i in range(40))
    new = old
    for i in (2, 10, 18, 26, 34):
        new = new.replace(f"    return ctx.run({i})\n",
                          f"    ctx.log('step {i}')\n    return ctx.run({i}, retry=True)\n")
    dlg = ask("steps.py", old, new)
    dlg.open()
    view = _shown(dlg.diff_view, "the dialog's diff view")
    view.go_to(1)
    view.toggle()
    view.go_to(3)
    view.toggle()
    view.go_to(1)
    await settle(900)  # past the safety delay
    save(_composite(first, dlg), "06-per-hunk")
    dlg.close_silently()

    # 7. a big diff's navigator: 41 hunks over a 6,000-line file, at hunk 7
    old = "".join(f"VALUE_{i} = {i}\n" for i in range(6000))
    new = old
    for k in range(41):
        i = 60 + k * 140
        new = new.replace(f"VALUE_{i} = {i}\n", f"VALUE_{i} = {i} * 2  # doubled\nCHECK_{i} = True\n")
    dlg = ask("values.py", old, new)
    dlg.open()
    view = _shown(dlg.diff_view, "the dialog's diff view")
    view.finish_loading()
    view.go_to(6)
    await settle(900)
    save(_composite(first, dlg), "07-navigator")
    dlg.close_silently()

    # 11, 12. the changes panel: a partly allowed change, a new file, a 20,000-line change shown in full
    from desktop_agent.ui.screenshots_changes import shoot_changes

    await shoot_changes(folder, save)
    first.close()

    # 13, 14. the MCP Servers view (one server up, one failed, one restarting) and the provider settings
    await _shoot_ecosystem(folder, save)

    # 15-17. expanded tool cards (fields, an exit line, an MCP tool), queued messages, and 900×600 after the tour
    await _shoot_window_ux(folder, save)
    return saved


class _ShotSession:
    """Stands in for a session of our host with three MCP servers (a ``SessionHandle``: the Servers view shows its
    ``state.mcp_servers``); it runs no turn and answers no request."""

    def __init__(self, cwd: str, servers: list[dict[str, Any]]):
        from desktop_agent.client.base import HandleState

        self._state = HandleState(cwd=cwd, manages_mcp=True, mcp_servers=servers)

    @property
    def session_id(self) -> str:
        return "screenshot"

    @property
    def model(self) -> str:
        return "claude-sonnet-4-5"

    @property
    def permission_mode(self) -> str:
        return "default"

    @property
    def state(self) -> HandleState:
        return self._state

    def submit(self, prompt: str | list[dict[str, Any]]) -> AsyncIterator[AgentEvent]:
        raise NotImplementedError("the screenshots' stand-in session runs no turn")

    def interrupt(self) -> None:
        pass

    def set_permission_mode(self, mode: str) -> Ack:
        raise NotImplementedError("the screenshots' stand-in session keeps its mode")

    def set_model(self, model: str | None) -> Ack:
        raise NotImplementedError("the screenshots' stand-in session keeps its model")

    def answer(self, request_id: str, reply: PermissionReply) -> bool:
        return False  # nothing is pending

    async def request(self, request: WireModel) -> dict[str, Any]:
        raise NotImplementedError("the screenshots' stand-in session answers no request")

    async def restart(self) -> None:
        pass

    async def end(self, reason: str | None = "other", *, discard_if_empty: bool = False) -> bool:
        return True


async def _shoot_ecosystem(folder: str, save) -> None:
    from desktop_agent import config
    from desktop_agent.ui.window.main_window import MainWindow

    win = MainWindow()
    win.resize(W, H)
    win.show()
    populate_streaming(win, folder)
    err = ("McpError: Connection closed\nTraceback (most recent call last):\n  File \"server.py\", line 41, in main\n"
           "ConnectionRefusedError: [Errno 111] Connection refused: postgres://localhost:5432")
    win.controller.session = _ShotSession(folder, [
        {"name": "github", "status": "connected", "transport": "stdio", "source": "~/.claude.json",
         "tools": ["create_issue", "get_pull_request", "list_commits", "search_code", "add_comment"],
         "error": None, "restarts": 0},
        {"name": "postgres", "status": "failed", "transport": "stdio", "source": ".mcp.json",
         "tools": ["query", "list_tables"], "error": err, "restarts": 1},
        {"name": "docs", "status": "connected", "transport": "http", "source": "--mcp-config",
         "tools": ["search_docs"], "error": None, "restarts": 0},
    ])
    win.banners.restarting = {"docs"}
    view = win.banners.show_servers()
    await settle(300)
    save(_composite(win, view), "13-mcp-servers")
    view.close()
    win.banners.restarting = set()
    win.controller.session = None
    win.close()

    s = config.AppSettings.load()  # the throwaway HOME: an OpenAI-compatible local server
    s.provider, s.openai_base_url, s.model = "openai", "http://localhost:11434/v1", "qwen2.5-coder:7b"
    s.save()
    first = MainWindow()
    first.resize(W, H)
    first.show()
    dlg = first.show_settings()
    await until(dlg.key_facts_known)
    await settle(200)
    save(_composite(first, dlg), "14-provider-settings")
    dlg.reject()
    s.provider, s.openai_base_url, s.model = "anthropic", None, None
    s.save()
    first.close()


async def _shoot_window_ux(folder: str, save) -> None:
    from desktop_agent.core import events as ev
    from desktop_agent.ui.window.main_window import MainWindow, start_tour_window

    win = MainWindow()
    win.resize(W, H)
    win.show()
    populate_streaming(win, folder)
    c = win.controller
    c.handle_event(ev.ToolCallStarted(tool_use_id="t5", name="mcp__demo__echo", input={"text": "hello"}))
    c.handle_event(ev.ToolCallFinished(tool_use_id="t5", name="mcp__demo__echo", content="hello"))
    c.handle_event(ev.ToolCallStarted(tool_use_id="t6", name="Edit", input={
        "file_path": f"{folder}/src/date.ts", "old_string": "  return d.getDay();\n",
        "new_string": "  return isoWeek(d);\n", "replace_all": False}))
    c.handle_event(ev.ToolCallFinished(tool_use_id="t6", name="Edit", content="The file src/date.ts was updated.",
                                       data={"filePath": f"{folder}/src/date.ts", "structuredPatch": []}))
    for tid in ("t3", "t5", "t6"):
        win.conversation.cards[tid].set_expanded(True)
    await settle(300)
    win.conversation.ensureWidgetVisible(win.conversation.cards["t3"], 0, 16)
    await settle(200)
    save(win.grab().toImage(), "15-tool-cards")
    for tid in ("t3", "t5", "t6"):
        win.conversation.cards[tid].set_expanded(False)
    win.message_queue.add("Also add a test for week 53 of 2026")
    row = win.message_queue.add("Then run the whole suite and tell me what else fails")
    win.message_queue.add("And update the changelog")
    row.start_edit()
    await settle(300)
    win.conversation.verticalScrollBar().setValue(win.conversation.verticalScrollBar().maximum())
    await settle(200)
    save(win.grab().toImage(), "16-queued-messages")

    tour = start_tour_window(show=False)
    tour.resize(W, H)
    tour.show()
    win.close()  # after the next window is up: the app quits with its last window
    await _tour(tour, ["allow", "allow", "allow", "deny", "allow"])
    tour.prompt.clear()
    tour.conversation.append_text("A wide line scrolls inside its block:\n\n```ts\nexport const handlers = ["
                                  + ", ".join(f"handle{i}" for i in range(24)) + "];\n```\n\nThe prose stays put.")
    tour.conversation.close_text()
    tour.resize(900, 600)
    await settle(500)
    tour.conversation.verticalScrollBar().setValue(tour.conversation.verticalScrollBar().maximum())
    await settle(200)
    save(tour.grab().toImage(), "17-900x600-changes")
    tour.close()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print("usage: python -m desktop_agent.ui.screenshots [OUTDIR [THEME ...]]\n"
              "Shoot the window's screenshots into OUTDIR (default: screenshots) for each THEME (default: light "
              "dark).\nDESKTOP_AGENT_UI_LANGUAGE=zh_CN shoots the translated UI.")
        return 0
    outdir = os.path.abspath(argv[0] if argv else "screenshots")
    themes = argv[1:] or ["light", "dark"]
    os.makedirs(outdir, exist_ok=True)
    isolate_home()
    from desktop_agent.ui.main import install_translator, make_app, make_loop

    app = make_app()
    if os.environ.get("DESKTOP_AGENT_UI_LANGUAGE"):  # e.g. zh_CN: shoot the translated UI
        install_translator(app, os.environ["DESKTOP_AGENT_UI_LANGUAGE"])
    loop = make_loop(app)
    asyncio.set_event_loop(loop)
    saved: list[str] = []
    with loop:
        for theme in themes:
            saved += loop.run_until_complete(_shoot(outdir, theme))
    for path in saved:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
