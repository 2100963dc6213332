"""The pages' Content-Security-Policy, the strict proxy-header setting, and JSON last-resort
errors under /api/ (production mode end to end: tests/integration/test_production_settings.py)."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse
from django.test import Client, RequestFactory

from agents_app.api import bad_request_view, server_error_view
from agents_app.web.csp import ContentSecurityPolicyMiddleware
from studio.envparse import envheader

pytestmark = pytest.mark.django_db


def test_pages_carry_the_policy_and_api_json_does_not(settings: Any) -> None:
    client = Client()
    for path in ("/login/", "/admin/login/"):
        response = client.get(path)
        assert response.status_code == 200
        assert response["Content-Security-Policy"] == settings.STUDIO_CSP
        assert "script-src 'self'" in settings.STUDIO_CSP
    assert "Content-Security-Policy" not in client.get("/api/auth/csrf").headers


def _middleware(response: HttpResponse) -> ContentSecurityPolicyMiddleware:
    return ContentSecurityPolicyMiddleware(lambda request: response)


def test_a_response_with_its_own_policy_keeps_it() -> None:
    own = HttpResponse("<p>file</p>", content_type="text/html")
    own["Content-Security-Policy"] = "sandbox; default-src 'none'"
    answered = _middleware(own)(RequestFactory().get("/media/x.html"))
    assert answered["Content-Security-Policy"] == "sandbox; default-src 'none'"


def test_report_only_and_off_are_honoured(settings: Any) -> None:
    settings.STUDIO_CSP_REPORT_ONLY = True
    page = _middleware(HttpResponse("<p>x</p>"))(RequestFactory().get("/chat/"))
    assert page["Content-Security-Policy-Report-Only"] == settings.STUDIO_CSP
    assert "Content-Security-Policy" not in page.headers
    settings.STUDIO_CSP_REPORT_ONLY = False
    settings.STUDIO_CSP = ""
    page = _middleware(HttpResponse("<p>x</p>"))(RequestFactory().get("/chat/"))
    assert "Content-Security-Policy" not in page.headers


def test_the_proxy_header_setting_refuses_what_is_not_a_header_name(monkeypatch: Any) -> None:
    monkeypatch.setenv("SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto")
    assert envheader("SECURE_PROXY_SSL_HEADER") == "HTTP_X_FORWARDED_PROTO"
    monkeypatch.setenv("SECURE_PROXY_SSL_HEADER", "HTTP_X_FORWARDED_PROTO=https")
    with pytest.raises(ImproperlyConfigured, match="header name"):
        envheader("SECURE_PROXY_SSL_HEADER")


def test_last_resort_errors_under_api_are_json_and_pages_stay_html() -> None:
    factory = RequestFactory()
    failed = server_error_view(factory.get("/api/threads/x"))
    assert failed.status_code == 500 and failed["Content-Type"] == "application/json"
    assert failed.content == b'{"error": "Internal error"}'
    refused = bad_request_view(factory.get("/api/threads"), ValueError("bad"))
    assert refused.status_code == 400 and refused["Content-Type"] == "application/json"
    page = server_error_view(factory.get("/chat/"))
    assert page.status_code == 500 and page["Content-Type"].startswith("text/html")
