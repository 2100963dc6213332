"""The studio's side of OAuth MCP servers (issue #57): the form's sign-in fields and their
refusals naming the field, the Connect button on an OAuth server's page, *Test connection*
asking the tester to connect first, and the connection pages asking a signed-out person to
sign in."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.models import McpServer
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form

ADD = reverse("admin:agents_app_mcpserver_add")
pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def test_an_oauth_server_is_saved_from_the_form_and_offers_connect(staff: Client) -> None:
    data = fill(
        read_form(staff, ADD),
        name="tracker",
        url="https://mcp.tracker.example/mcp",
        auth="oauth",
        oauth_scope="issues:read",
    )
    response = post(staff, ADD, data)
    assert response.status_code == 302, errors_of(response)
    row = McpServer.objects.get(name="tracker")
    assert (row.auth, row.oauth_scope) == ("oauth", "issues:read")
    page = staff.get(reverse("admin:agents_app_mcpserver_change", args=[row.pk])).content
    assert reverse("mcp-oauth-connect", args=[row.pk]) in page.decode()
    # Testing it takes the tester's own connection, asked for in words.
    test_url = reverse("admin:agents_app_mcpserver_test", args=[row.pk])
    said = staff.post(test_url, follow=True).content.decode()
    assert "needs your own account" in said and "Traceback" not in said


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"auth": "magic"}, "auth", "Select a valid choice"),
        (
            {"auth": "oauth", "headers": "Authorization=Bearer ${T}"},
            "headers",
            "carries the person's token",
        ),
        (
            {"auth": "oauth", "oauth_client_id": "c1", "oauth_client_secret": "s3cret"},
            "oauth_client_secret",
            "${NAME}",
        ),
        ({"oauth_client_id": "c1"}, "auth", "need auth: oauth"),
        ({"auth": "oauth", "oauth_client_secret": "${S}"}, "oauth_client_secret", "client id"),
    ],
)
def test_oauth_settings_that_cannot_work_are_refused_naming_the_field(
    staff: Client, fields: dict[str, str], field: str, words: str
) -> None:
    data = fill(read_form(staff, ADD), name="x", url="https://x.example/mcp", **fields)
    response = post(staff, ADD, data)
    assert response.status_code == 200
    assert words in " ".join(errors_of(response).get(field, [])), errors_of(response)
    assert not McpServer.objects.exists()


def test_a_signed_out_person_is_asked_to_sign_in_first(client: Client) -> None:
    row = McpServer.objects.create(name="tracker", url="https://t.example/mcp", auth="oauth")
    for path in (
        reverse("mcp-oauth-connect", args=[row.pk]),
        reverse("mcp-oauth-connections"),
        reverse("mcp-oauth-callback") + "?code=x&state=y",
    ):
        answer = client.get(path)
        assert answer.status_code == 302 and answer["Location"].startswith("/login/"), path


def test_a_callback_with_nothing_pending_changes_nothing(client: Client, alice: Any) -> None:
    client.force_login(alice)
    answer = client.get(reverse("mcp-oauth-callback") + "?code=x&state=y")
    assert answer.status_code == 400 and b"No connection was in progress" in answer.content
    # A server without OAuth has no Connect.
    row = McpServer.objects.create(name="plain", url="https://p.example/mcp")
    assert client.get(reverse("mcp-oauth-connect", args=[row.pk])).status_code == 404
