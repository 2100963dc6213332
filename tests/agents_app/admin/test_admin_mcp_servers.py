"""The MCP servers page: add a server, the stdio rule, "Test connection" in plain words,
and the prompt editor offering the server's tools beside code tools."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.models import McpServer
from tests.agents_app.admin.admin_pages import errors_of, fill, post, read_form
from tests.mcp_servers.processes import HttpMcpServer

ADD = reverse("admin:agents_app_mcpserver_add")
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpMcpServer]:
    server = HttpMcpServer().start()
    yield server
    server.stop()


@pytest.fixture
def staff(client: Client, ops: Any) -> Client:
    client.force_login(ops)
    return client


def test_add_then_test_connection_lists_the_tools(
    staff: Client, http_server: HttpMcpServer
) -> None:
    data = fill(read_form(staff, ADD), name="web", url=http_server.url, timeout_ms="5000")
    response = post(staff, ADD, data)
    assert response.status_code == 302, errors_of(response)
    server = McpServer.objects.get(name="web")
    test_url = reverse("admin:agents_app_mcpserver_test", args=[server.pk])
    change = reverse("admin:agents_app_mcpserver_change", args=[server.pk])
    assert test_url in staff.get(change).content.decode()
    page = staff.post(test_url, follow=True).content.decode()
    assert "Connected to &#x27;web&#x27;" in page and "echo" in page
    assert "mcp:web/echo" in page  # the cached tool table

    editor = staff.get(reverse("admin:agents_app_prompt_add")).content.decode()
    assert 'value="mcp:web/echo"' in editor  # suggested beside code tools
    assert "MCP tool (web)" in editor


def test_test_connection_says_what_failed(staff: Client) -> None:
    server = McpServer.objects.create(name="dead", url="http://127.0.0.1:9/mcp", timeout_ms=2000)
    test_url = reverse("admin:agents_app_mcpserver_test", args=[server.pk])
    page = staff.post(test_url, follow=True).content.decode()
    assert "Could not list the tools of &#x27;dead&#x27;" in page
    assert "Traceback" not in page


def test_stdio_server_refused_at_save_while_stdio_is_off(staff: Client) -> None:
    data = fill(read_form(staff, ADD), name="local", transport="stdio", command="python3")
    response = post(staff, ADD, data)
    assert response.status_code == 200
    assert any("MCP_ALLOW_STDIO" in e for e in errors_of(response)["transport"])
    assert not McpServer.objects.exists()


def test_literal_token_in_header_refused_in_the_form(staff: Client) -> None:
    data = fill(
        read_form(staff, ADD),
        name="gh",
        url="https://mcp.example.com/mcp",
        headers="Authorization=Bearer ghp_literal",
    )
    response = post(staff, ADD, data)
    assert response.status_code == 200
    assert "${NAME}" in " ".join(errors_of(response)["headers"])


def test_who_may_not_read_instance_env_values_may_not_point_them_at_a_new_server(
    client: Client,
) -> None:
    # Headers and env name env values that resolve down to the instance's: saving them with
    # a new address would send the instance's secret there, so that takes the right to read
    # instance env values (as testing the server does); other edits stay allowed.
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission

    from agents_app.models import EnvValue

    secret = EnvValue(scope="instance", key="GH_TOKEN", value_type="secret")
    secret.value = "ghp_planted_instance_secret"
    secret.save()
    row = McpServer.objects.create(
        name="gh",
        transport="http",
        url="https://mcp.example.com/mcp",
        headers={"Authorization": "Bearer ${GH_TOKEN}"},
    )
    editor = get_user_model().objects.create_user("editor", password="pw-for-tests-1")
    editor.is_staff = True
    editor.save()
    editor.user_permissions.set(
        Permission.objects.filter(
            codename__in=["view_mcpserver", "change_mcpserver", "add_mcpserver"]
        )
    )
    client.force_login(editor)
    refused = post(
        client,
        ADD,
        fill(
            read_form(client, ADD),
            name="mine",
            url="https://collector.example.com/mcp",
            headers="Authorization=Bearer ${GH_TOKEN}",
        ),
    )
    assert "uses GH_TOKEN, an instance env value you may not read" in " ".join(
        errors_of(refused)["headers"]
    )
    change = reverse("admin:agents_app_mcpserver_change", args=[row.pk])
    moved = post(
        client, change, fill(read_form(client, change), url="https://collector.example.com/mcp")
    )
    assert "an instance env value you may not read" in " ".join(errors_of(moved)["headers"])
    assert list(McpServer.objects.values_list("name", "url")) == [
        ("gh", "https://mcp.example.com/mcp")
    ]
    kept = post(client, change, fill(read_form(client, change), timeout_ms="20000"))
    assert kept.status_code == 302, errors_of(kept)
