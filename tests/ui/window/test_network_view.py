"""The Network view (ui/window/network_view.py), issue 27: records shown newest first with the rule and bytes,
"Refused only", a refused row's two buttons, the log it reads and the settings write. (Its confirmation:
tests/ui/dialogs/test_allow_host.py.)"""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from desktop_agent.permissions.egress import EgressRecord, log_path_for
from desktop_agent.client.network import add_host_to_settings, read_session_log
from desktop_agent.ui.window.network_view import NetworkView


def _rec(host: str, decision: str, **kw) -> dict:
    base = EgressRecord(ts=1796190000.0, session="s", proto=kw.pop("proto", "connect"), host=host,
                        port=kw.pop("port", 443), decision=decision,  # type: ignore[arg-type]
                        rule=kw.pop("rule", "allowedDomains: pypi.org" if decision == "allow" else
                                    "no entry of sandbox.network.allowedDomains allows it"), **kw)
    return base.to_json()


RECORDS = [_rec("pypi.org", "allow", up=1200, down=5_300_000), _rec("evil.example", "deny"),
           _rec("files.pythonhosted.org", "allow", up=900, down=48_000), _rec("blocked.pkgs.test", "deny",
                                                                              rule="deniedDomains: blocked.pkgs.test")]


def test_rows_newest_first_with_rule_bytes_and_buttons_on_refused_ones(qtbot):
    view = NetworkView()
    qtbot.addWidget(view)
    view.set_records(RECORDS)
    assert view.summary.text() == "4 requests: 2 allowed, 2 refused"
    assert [r.host for r in view.rows] == ["blocked.pkgs.test", "files.pythonhosted.org", "evil.example", "pypi.org"]
    pypi = view.rows[-1]
    assert "allowedDomains: pypi.org" in pypi.detail.text() and "5.1 MB down" in pypi.detail.text()
    assert pypi.allow_button is None and pypi.add_button is None
    assert view.rows[0].allow_button is None  # refused by deniedDomains: allowing it would change nothing
    evil = view.rows[2]
    assert evil.allow_button is not None and evil.add_button is not None
    allowed, added = [], []
    view.allow_requested.connect(allowed.append)
    view.add_requested.connect(added.append)
    qtbot.mouseClick(evil.allow_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(evil.add_button, Qt.MouseButton.LeftButton)
    assert allowed == ["evil.example"] and added == ["evil.example"]
    view.refused_only.setChecked(True)
    assert [r.host for r in view.rows] == ["blocked.pkgs.test", "evil.example"]
    view.set_records([])
    assert view.summary.text() == "No network requests in this session." and not view.rows


def test_the_log_the_proxy_writes_is_what_the_view_reads(tmp_path):
    path = log_path_for(str(tmp_path), "sess-1")
    import os
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as fh:
        for r in RECORDS:
            fh.write(json.dumps(r) + "\n")
        fh.write("{not json\n")  # a torn last line (kill -9) is skipped
    assert [r["host"] for r in read_session_log(str(tmp_path), "sess-1")] == [r["host"] for r in RECORDS]
    assert read_session_log(str(tmp_path), "other") == []


def test_add_to_settings_keeps_the_file_and_adds_once(tmp_path):
    settings = tmp_path / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"allow": ["Read"]}, "sandbox": {"enabled": True}}))
    add_host_to_settings(str(tmp_path), "pypi.org")
    add_host_to_settings(str(tmp_path), "pypi.org")
    data = json.loads(settings.read_text())
    assert data["permissions"] == {"allow": ["Read"]} and data["sandbox"]["enabled"] is True
    assert data["sandbox"]["network"]["allowedDomains"] == ["pypi.org"]
    settings.write_text(json.dumps({"sandbox": {"network": "all"}}))
    with pytest.raises(ValueError):
        add_host_to_settings(str(tmp_path), "pypi.org")
    assert json.loads(settings.read_text()) == {"sandbox": {"network": "all"}}  # nothing changed
    add_host_to_settings(str(tmp_path / "fresh"), "x.example")
    assert json.loads((tmp_path / "fresh" / ".claude" / "settings.local.json").read_text()) == {
        "sandbox": {"network": {"allowedDomains": ["x.example"]}}}


def test_new_refusals_after_a_command_name_each_host_once_and_skip_deny_rules():
    from desktop_agent.ui.window.network_view import new_refusals

    recs = RECORDS + [_rec("evil.example", "deny", port=80), _rec("other.example", "deny")]
    hosts, seen = new_refusals(recs, 0)
    assert hosts == [("evil.example", 443), ("other.example", 443)] and seen == len(recs)
    assert new_refusals(recs, seen) == ([], seen)  # nothing new since the last command
    more = recs + [_rec("third.example", "deny", port=8080)]
    assert new_refusals(more, seen) == ([("third.example", 8080)], len(more))


@pytest.mark.needs_sandbox
def test_a_refused_host_gets_a_banner_that_allows_it_for_the_session(qtbot, qloop, fake, make_window, workdir,
                                                                     _isolated_home):
    """The real window, an in-process session, the real sandbox and proxy: a Bash call to a host the list does not
    name is refused, the window shows a banner for it, and its action — after the focus-safe confirmation —
    allows the host for the session's next commands."""
    import asyncio

    from tests.fakes.anthropic_server import reply, text, tool_use
    from tests.ui.flow import open_and_send, wait_for

    settings = _isolated_home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"sandbox": {"network": {"allowedDomains": ["allowed.example"]}}}))
    fake.script([reply(tool_use("Bash", {"command": "curl -s -m 5 http://refused.example/ ; echo done"},
                                id="toolu_net")), reply(text("It was refused."))])
    win = make_window(permission_mode="bypassPermissions")

    async def scenario():
        task = await open_and_send(qtbot, win, workdir, "fetch it")
        await asyncio.wait_for(task, 30)
        banner = await wait_for(lambda: win.conversation.banners.get("egress:refused.example"), what="the banner")
        assert "refused network access to refused.example:80" in banner.text_plain
        win.banners.on_banner_action("egress-allow:refused.example")
        box = win._allow_host_box
        box.safety_delay_ms = 300
        await wait_for(box.is_ready, what="the confirmation's delay")
        qtbot.mouseClick(box.yes_button, Qt.MouseButton.LeftButton)
        await wait_for(lambda: "egress:refused.example" not in win.conversation.banners, what="the banner to go")

    qloop.run_until_complete(scenario())
    sandbox = engine_of(win).ctx.sandbox
    assert sandbox.session_hosts == ["refused.example"]
    assert sandbox.rules(sandbox_settings_of(win)).decide("refused.example", 80).decision == "allow"


def sandbox_settings_of(win):
    from desktop_agent.permissions.sandbox_settings import load_sandbox_settings

    return load_sandbox_settings(engine_of(win).permission_context)


def engine_of(win):
    """The window's session's engine (``AgentSession``), in the host in this process."""
    return win.controller.client.host.sessions[win.controller.session.session_id].session
