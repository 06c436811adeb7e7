"""Settings → "Answer from my phone" (issue 26) in the real window: the switch starts the host's phone page on the
window's host (HTTPS, a pairing URL with the certificate's fingerprint), the section shows its pairing QR, and
switching it off stops the page (its port is closed)."""

from __future__ import annotations

import asyncio
import socket
import ssl
from urllib.parse import urlsplit


def test_the_switch_starts_and_stops_the_phone_page(qtbot, qloop, make_window, workdir, keep_app_running):
    from tests.ui.flow import wait_for

    win = make_window()
    assert qloop.run_until_complete(win.folders.open_folder(workdir))
    dlg = win.show_settings()
    assert dlg.phone.switch.isChecked() is False and getattr(win, "phone_server", None) is None

    async def scenario():
        dlg.phone.switch.setChecked(True)
        server = await wait_for(lambda: getattr(win, "phone_server", None), 15, "the phone page")
        assert dlg.phone.access is server
        url = server.pairing_url()
        parts = urlsplit(url)
        assert parts.scheme == "https" and parts.fragment  # the single-use code travels in the fragment
        dlg.phone.show_pairing()
        assert dlg.phone.qr.isVisibleTo(dlg) and not dlg.phone.qr.pixmap().isNull()
        port = parts.port or 443

        def handshake() -> str:
            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            with socket.create_connection((parts.hostname, port), timeout=5) as raw:
                with ctx.wrap_socket(raw, server_hostname=parts.hostname) as tls:
                    return tls.version() or ""

        assert (await asyncio.to_thread(handshake)).startswith("TLS")
        dlg.phone.switch.setChecked(False)
        await wait_for(lambda: getattr(win, "phone_server", None) is None, 10, "the page to stop")
        await asyncio.sleep(0.2)

        def refused() -> bool:
            try:
                socket.create_connection((parts.hostname, port), timeout=2).close()
            except OSError:
                return True
            return False

        assert await asyncio.to_thread(refused)

    qloop.run_until_complete(scenario())
    dlg.close()


def test_the_switch_is_saved_and_the_page_comes_back_at_the_next_launch_on_the_same_origin(
        qtbot, qloop, make_window, workdir, keep_app_running):
    from desktop_agent.config import AppSettings
    from tests.ui.flow import wait_for

    assert AppSettings.load().answer_from_phone is False  # off by default
    first = make_window()
    assert qloop.run_until_complete(first.folders.open_folder(workdir))
    assert getattr(first, "phone_server", None) is None  # not started unless asked
    dlg = first.show_settings()

    async def switch_on() -> str:
        dlg.phone.switch.setChecked(True)
        server = await wait_for(lambda: getattr(first, "phone_server", None), 15, "the phone page")
        await wait_for(lambda: AppSettings.load().answer_from_phone, 5, "the switch saved")
        origin = server.origin
        await server.stop()  # the first window's process ends: its page with it
        first.phone_server = None
        return origin

    origin = qloop.run_until_complete(switch_on())
    dlg.close()

    second = make_window()  # the next launch: the page is served again once its first session has a host

    async def relaunch() -> None:
        assert await second.folders.open_folder(workdir)
        server = await wait_for(lambda: getattr(second, "phone_server", None), 15, "the page served again")
        assert server.origin == origin  # the same port: a paired phone's key (bound to the origin) still works
        settings = second.show_settings()
        assert settings.phone.switch.isChecked() and settings.phone.access is server
        settings.phone.switch.setChecked(False)
        await wait_for(lambda: getattr(second, "phone_server", None) is None, 10, "the page to stop")
        await wait_for(lambda: AppSettings.load().answer_from_phone is False, 5, "the switch saved off")
        settings.close()

    qloop.run_until_complete(relaunch())
