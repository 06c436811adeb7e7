"""The wire client's TLS settings: a plain-http base URL skips loading the CA bundle but never trusts TLS."""

from __future__ import annotations

import ssl

from desktop_agent.model import wire


def test_https_url_verifies_with_the_system_bundle():
    assert wire._tls_verify_for("https://api.anthropic.com/v1/messages") is True
    assert wire._tls_verify_for("HTTPS://example.test/v1/messages") is True


def test_http_url_gets_a_context_that_trusts_no_certificate():
    ctx = wire._tls_verify_for("http://127.0.0.1:8080/v1/messages")
    assert isinstance(ctx, ssl.SSLContext)
    assert ctx.verify_mode == ssl.CERT_REQUIRED
    assert ctx.check_hostname is True
    assert ctx.get_ca_certs() == []  # nothing loaded, nothing trusted


def test_messages_api_on_http_does_not_load_the_ca_bundle():
    api = wire.MessagesAPI("k", "http://127.0.0.1:9")
    assert api.url == "http://127.0.0.1:9/v1/messages"
    pool = api.http._transport._pool  # httpx2's connection pool holds the context it was given
    assert pool._ssl_context.get_ca_certs() == []
