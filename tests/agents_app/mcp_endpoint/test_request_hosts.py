"""The host and origin rules ``/mcp`` applies in front of Django (``agents_app.mcp_endpoint.hosts``):
Django's own ``ALLOWED_HOSTS`` matching, and origins trusted as its CSRF check trusts them.
(The endpoint itself is tested over HTTP in tests/integration/test_mcp_endpoint.py.)"""

from __future__ import annotations

from typing import Any

from agents_app.mcp_endpoint.hosts import host_allowed, origin_allowed


def test_hosts_match_as_django_matches_them(settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["studio.example.com", ".corp.example"]
    assert host_allowed("studio.example.com")
    assert host_allowed("studio.example.com:8443")
    assert host_allowed("mcp.corp.example")
    assert not host_allowed("evil.example")
    assert not host_allowed("")
    assert not host_allowed("studio.example.com.evil.example")


def test_origins_are_same_site_or_trusted(settings: Any) -> None:
    settings.CSRF_TRUSTED_ORIGINS = ["https://app.example.com", "https://*.tools.example"]
    host = "studio.example.com"
    assert origin_allowed(None, host)  # programs send none
    assert origin_allowed("https://studio.example.com", host)
    assert origin_allowed("https://app.example.com", host)
    assert origin_allowed("https://ide.tools.example", host)
    assert not origin_allowed("http://ide.tools.example", host)  # the scheme counts too
    assert not origin_allowed("https://evil.example", host)
    assert not origin_allowed("null", host)
