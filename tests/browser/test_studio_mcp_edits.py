"""Issue #40 item 11: an MCP server's "Test connection" tests the URL on screen (an unsaved
edit), not the saved one, and stores nothing until Save."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, Route, expect

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


def test_an_edit_typed_before_the_page_s_script_ran_is_the_one_tested(
    site: Site, page: Page, mcp_server: HttpMcpServer
) -> None:
    """The script's "saved settings" are the form as the server sent it: a URL typed while
    the script was still loading is an edit (CI once typed first, and the saved URL was
    tested instead)."""
    site.python(
        "from agents_app.models import McpServer\n"
        "McpServer.objects.update_or_create(name='early', defaults={'transport': 'http', "
        "'url': 'http://127.0.0.1:9/mcp'})\n"
    )
    admin_login(page, site)
    page.goto(f"{site.url}/admin/agents_app/mcpserver/")
    held: list[Route] = []
    page.route("**/studio/mcp_test.js", lambda route: held.append(route))
    page.get_by_role("link", name="early", exact=True).click()
    page.locator("#id_url").fill(mcp_server.url)  # typed while the script is held back
    while not held:
        page.wait_for_timeout(50)  # lets Playwright take the script's request meanwhile
    held[0].continue_()
    page.unroute("**/studio/mcp_test.js")
    expect(page.locator(".studio-connection-result")).to_be_attached()  # the script ran
    page.get_by_role("button", name="Test connection").click()
    expect(page.locator(".studio-connection-result")).to_contain_text(
        f"Connected to {mcp_server.url}"
    )
