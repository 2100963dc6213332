"""The sign-in pages with an identity provider configured: "Sign in with <provider>" on the
chat's and the studio's, the password form hidden by STUDIO_OIDC_ONLY (the studio's still
reachable with ?password=1, where the break-glass `manage.py set_admin_password` works),
and the client secret on no page. The sign-in itself runs against a real provider in
tests/browser/test_identity_sign_in.py."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db
PLANTED_SECRET = "planted-client-secret-7Hq2"
OIDC = {
    "STUDIO_OIDC_ISSUER": "https://id.example.com",
    "STUDIO_OIDC_CLIENT_ID": "studio",
    "STUDIO_OIDC_CLIENT_SECRET": PLANTED_SECRET,
    "STUDIO_OIDC_PROVIDER_NAME": "Example SSO",
}


def test_without_a_provider_the_pages_are_as_before() -> None:
    page = Client().get("/login/").content.decode()
    assert "Sign in with" not in page and 'name="password"' in page
    assert Client().get("/oidc/login/").status_code == 404


@override_settings(**OIDC)
def test_both_sign_in_pages_offer_the_provider_beside_the_password_form() -> None:
    chat = Client().get("/login/?next=/chat/t/abc").content.decode()
    assert "Sign in with Example SSO" in chat and 'href="/oidc/login/?next=/chat/t/abc"' in chat
    assert 'name="password"' in chat
    studio = Client().get("/admin/login/?next=/admin/").content.decode()
    assert "Sign in with Example SSO" in studio and 'name="password"' in studio
    assert PLANTED_SECRET not in chat + studio


@override_settings(**OIDC, STUDIO_OIDC_ONLY=True)
def test_oidc_only_hides_the_password_forms_but_the_break_glass_way_in_works(
    admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = Client().get("/login/").content.decode()
    studio = Client().get("/admin/login/").content.decode()
    for page in (chat, studio):
        assert "Sign in with Example SSO" in page and 'name="password"' not in page
    assert "Sign-in with a password is turned off" in studio
    monkeypatch.setattr("sys.stdin", io.StringIO("break-glass-pw-1\n"))
    call_command("set_admin_password", username="admin", stdout=io.StringIO())
    glass = Client()
    form = glass.get("/admin/login/?password=1").content.decode()
    assert 'name="password"' in form
    signed_in = glass.post(
        "/admin/login/?password=1",
        {"username": "admin", "password": "break-glass-pw-1", "next": "/admin/"},
    )
    assert signed_in.status_code == 302 and signed_in["Location"] == "/admin/"
    assert glass.get("/admin/").status_code == 200
