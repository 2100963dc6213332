"""Studio, MCP: an operator adds an HTTP MCP server and tests its connection; a prompt ticks
one of its tools; a scripted agent on that prompt calls it and replies in the chat."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser.support import Site, admin_login, shot
from tests.mcp_servers.processes import HttpMcpServer

CANARY = "canary-BROWSER-MCP-4c1d9e"
REPLY = "The echo tool answered."
SCRIPT = [
    {"toolCalls": [{"name": "webtools__echo", "arguments": {"text": "from the browser"}}]},
    {"content": REPLY},
]


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[HttpMcpServer]:
    server = HttpMcpServer().start()
    yield server
    server.stop()


def _seed(site: Site) -> None:
    site.python(
        "from agents_app.models import EnvValue\n"
        "from agents_app.services.definitions.saves import save_definitions\n"
        "from runtime.core.spec import ModelDefinition\n"
        "row = EnvValue(scope='instance', key='BROWSER_MCP_TOKEN', value_type='secret')\n"
        f"row.value = {CANARY!r}\n"
        "row.save()\n"
        "import json\n"
        "model = ModelDefinition(name='mcp_model', provider='test', model='scripted', "
        f"script=json.loads({json.dumps(SCRIPT)!r}))\n"
        "save_definitions([('m', model)])\n"
    )


def _save(page: Page, button: str = "Save and continue editing") -> None:
    page.get_by_role("button", name=button, exact=True).click()


def test_add_an_mcp_server_tick_its_tool_and_chat_with_an_agent_that_calls_it(
    site: Site, page: Page, mcp_server: HttpMcpServer
) -> None:
    _seed(site)
    admin_login(page, site)

    # 1. The server: URL and a header whose credential is an env value, then the test.
    page.goto(f"{site.url}/admin/")
    page.get_by_role("link", name="Add to MCP servers").click()
    page.locator("#id_name").fill("webtools")
    page.locator("#id_url").fill(mcp_server.url)
    page.locator("#id_headers").fill("Authorization=Bearer ${BROWSER_MCP_TOKEN}")
    _save(page)
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")
    page.get_by_role("button", name="Test connection").click()
    success = page.locator(".messagelist .success")
    expect(success).to_contain_text("Connected to 'webtools'")
    expect(success).to_contain_text("echo")
    expect(page.locator(".field-tool_table")).to_contain_text("mcp:webtools/echo")
    assert CANARY not in page.content()
    shot(page, "studio-mcp-server")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "studio-mcp-server-phone")
    page.set_viewport_size({"width": 1280, "height": 860})

    # 2. A prompt that ticks the server's echo tool.
    page.goto(f"{site.url}/admin/agents_app/prompt/add/")
    page.locator("#id_name").fill("mcp_prompt")
    page.locator("#id_text").fill("Use the echo tool.")
    page.get_by_role("tab", name="Model").click()
    page.locator("#id_model").select_option(label="mcp_model")
    page.get_by_role("tab", name="Tools").click()
    tick = page.locator("#mcp-tools input[data-tool='mcp:webtools/echo']")
    tick.check()
    expect(page.locator("#id_tool_entries-0-name")).to_have_value("mcp:webtools/echo")
    shot(page, "studio-mcp-prompt-ticks")
    _save(page)
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")
    page.get_by_role("tab", name="Tools").click()
    expect(page.locator("#mcp-tools input[data-tool='mcp:webtools/echo']")).to_be_checked()

    # 3. An agent on that prompt; "Try this agent" runs it on the Celery worker.
    page.goto(f"{site.url}/admin/agents_app/agent/add/")
    page.locator("#id_name").fill("mcp_agent")
    page.locator("#id_title").fill("Echo caller")
    page.locator("#id_side_a_prompt").select_option(label="mcp_prompt")
    _save(page)
    expect(page.locator(".messagelist .success")).to_contain_text("was added successfully")
    page.locator("#try-agent").scroll_into_view_if_needed()
    chat = page.frame_locator("#try-agent iframe")
    # Ready once the chat's script has chosen the agent (a Send before that submits the bare form).
    expect(chat.locator("#agent-select")).to_have_value("mcp_agent")
    chat.locator("#composer-input").fill("Please call the echo tool.")
    chat.get_by_role("button", name="Send").click()
    expect(chat.locator("#transcript")).to_contain_text(REPLY, timeout=30_000)
    shot(page, "studio-mcp-chat")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "studio-mcp-chat-phone")

    stored = site.python(
        "from agents_app.models import Message\n"
        "print(list(Message.objects.filter(role='tool', name='webtools__echo')"
        ".values_list('content', 'tool_status')))"
    )
    assert "('echo: from the browser', 'success')" in stored
    assert page.console_errors == []  # type: ignore[attr-defined]
