"""Issue #40 item 11: an MCP server's "Test connection" tests the URL on screen (an unsaved
edit), not the saved one, and stores nothing until Save."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot
from tests.mcp_servers.processes import HttpMcpServer

expect.set_options(timeout=20_000)


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[HttpMcpServer]:
    server = HttpMcpServer().start()
    yield server
    server.stop()


def test_test_connection_uses_the_unsaved_url(
    site: Site, page: Page, mcp_server: HttpMcpServer
) -> None:
    site.python(
        "from agents_app.models import McpServer\n"
        "McpServer.objects.update_or_create(name='moved', defaults={'transport': 'http', "
        "'url': 'http://127.0.0.1:9/mcp'})\n"
    )
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/mcpserver/")
    page.get_by_role("link", name="moved", exact=True).click()
    page.locator("#id_url").fill(mcp_server.url)  # the server moved; not saved yet
    page.get_by_role("button", name="Test connection").click()
    result = page.locator(".studio-connection-result")
    expect(result).to_contain_text(f"Connected to {mcp_server.url}")
    expect(result).to_contain_text("echo")
    expect(page.locator("#id_url")).to_have_value(mcp_server.url)  # the edit is still there
    saved = site.python(
        "from agents_app.models import McpServer\nprint(McpServer.objects.get(name='moved').url)"
    )
    assert saved.strip().splitlines()[-1] == "http://127.0.0.1:9/mcp"  # nothing stored
    shot(page, "studio-mcp-test-unsaved-1440")
